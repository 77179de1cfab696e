"""The benchmark suite: runs every area's benchmark (benchmarks/*.py, and the C++ Google
Benchmark binaries when built) on one device, prints one table per area (baseline, ours,
speedup, throughput, errors), writes <out>/<gpu>-sm<XY>[-quick].json (metadata, normalized rows,
every area's raw JSON), draws PNG charts with matplotlib when importable, and compares with an
earlier run.

    python benchmarks/run.py                      # full run on the GPU (hours; see --quick)
    python benchmarks/run.py --quick --out /tmp/suite
    python benchmarks/run.py --areas gemm,elementwise --compare benchmarks/results/X.json
    python benchmarks/run.py --device cpu --out /tmp/smoke   # tiny CPU smoke run
    python benchmarks/run.py --from-results benchmarks/results --out /tmp/charts --gpu H100

Exit status: 0 when all went well; bit 1 when an area failed or timed out (the others still
run); bit 2 with --fail-on-regression when --compare found a regression; 2 for bad arguments.
The suite lives beside the scripts and is not part of the wheel: run it from a checkout.
"""

import argparse
import os
import shutil
import sys
import tempfile

from results_file import RESULTS_DIR, file_stem
from suite import charts, compare, progress, registry, results, runner, table
from suite.rows import summarize


def parse_args(argv):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--areas", default=None, help="comma list (default: all; see --list)")
    p.add_argument("--list", action="store_true", help="list the areas and exit")
    p.add_argument(
        "--quick",
        action="store_true",
        help="each script's small / quick options (the output is then <stem>-quick.json; "
        "with --from-results a quick combined file names it so by itself)",
    )
    p.add_argument("--device", default=None, help="'cpu' for a smoke run (default: the GPU)")
    p.add_argument("--arch", default=None, help="SM arch for the file name, e.g. 90 (detected)")
    p.add_argument(
        "--out",
        default=None,
        help="folder of the combined JSON and charts "
        "(default benchmarks/results on a GPU; a CPU run writes only with --out)",
    )
    p.add_argument(
        "--work-dir",
        default=None,
        help="where the scripts write their per-area "
        "JSON and logs (default: --out when given, else a temporary folder)",
    )
    p.add_argument(
        "--build-dir",
        default=os.path.join(runner.REPO, "build", "gpu"),
        help="CMake build with the C++ benchmarks (default build/gpu)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds per area (default: the area's own, e.g. 1 h full / 15 min quick)",
    )
    p.add_argument(
        "--from-results",
        nargs="+",
        default=None,
        metavar="PATH",
        help="run nothing: read per-area JSON files / folders / combined files "
        "(later files win where rows repeat; a folder's files oldest first)",
    )
    p.add_argument(
        "--gpu",
        default=None,
        help="with --from-results: the GPU to read when "
        "several are present (a part of the file names, e.g. H200)",
    )
    p.add_argument(
        "--compare",
        default=None,
        metavar="PREVIOUS",
        help="an earlier combined JSON (or per-area files / folder)",
    )
    p.add_argument("--noise", type=float, default=0.05, help="regression threshold (0.05)")
    p.add_argument("--fail-on-regression", action="store_true")
    p.add_argument("--no-charts", action="store_true")
    p.add_argument("--plain-progress", action="store_true", help="text progress, no tqdm")
    return p.parse_args(argv)


def list_areas():
    cfg = runner.RunConfig(work_dir=".", stem="-")
    for a in registry.adapters():
        cmd, why = runner.command(a, cfg)
        what = a.script or f"cpp/{a.binary}"
        print(f"{a.area:15s} {what:22s} {'' if cmd else why}")


def run_areas(args, adapters):
    """Runs the areas; returns (Sources, per-area status, work dir, temporary?)."""
    env = dict(os.environ)
    if args.device == "cpu":
        env["PYGPUKIT_DEVICE"] = "cpu"
    info = runner.detect(args.device, env)
    cpu = info["type"] == "cpu"
    if cpu and args.device is None:
        raise SystemExit(
            f"no CUDA device ({info['cuda_status'].splitlines()[0]}); "
            "pass --device cpu for a smoke run"
        )
    sm = args.arch or info["sm"]
    stem = file_stem(info["gpu"], sm, cuda=not cpu)
    meta = {"gpu": info["gpu"], "sm": sm, "device": info["device"], "driver": info["driver"]}
    meta.update(pygpukit=info["pygpukit"], quick=args.quick)
    temporary = not (args.work_dir or args.out)
    work = args.work_dir or args.out or tempfile.mkdtemp(prefix="pgk-suite-")
    os.makedirs(work, exist_ok=True)
    print(
        f"pygpukit {info['pygpukit']} on {info['device']} ({info['gpu']}, sm {sm or '-'}); "
        f"{'quick' if args.quick else 'full'} run of {len(adapters)} area(s); work in {work}",
        flush=True,
    )
    cfg = runner.RunConfig(
        work_dir=work,
        stem=stem,
        quick=args.quick,
        cpu=cpu,
        build_dir=os.path.abspath(args.build_dir),
        timeout=args.timeout,
        env=env,
    )
    bar = progress.make(len(adapters), plain=args.plain_progress)
    status, raw, notes = {}, {}, []
    try:
        for a in adapters:
            res = runner.run_area(a, cfg, bar)
            files, errors = results.read_files(res["files"])
            if files:
                raw[a.area] = files
            if errors:
                notes += errors
                if res["status"] == "ok":
                    res.update(status="failed", message="; ".join(errors))
            res["files"] = list(files)
            status[a.area] = res
    finally:
        bar.close()
    return results.Sources(stem, raw, meta, notes), status, work, temporary


def loaded_status(src, adapters):
    return {
        a.area: {
            "status": "loaded" if a.area in src.raw else "missing",
            "files": list(src.raw.get(a.area, {})),
        }
        for a in adapters
    }


def print_report(rows, status, notes, adapters, comparison, against):
    changes = compare.changes_by_key(comparison) if comparison else None
    summary = summarize(rows)
    for a in adapters:
        rs = [r for r in rows if r["area"] == a.area]
        if rs:
            print("\n" + table.render(a.area, rs, summary.get(a.area), changes))
    print("\n== areas")
    for area, s in status.items():
        extra = s.get("message") or ", ".join(s.get("files", []))
        print(f"  {area:15s} {s['status']:8s} {extra}")
    for n in notes:
        print(f"  note: {n}")
    if comparison:
        print("\n" + "\n".join(compare.report(comparison, against)))


def main(argv=None):
    args = parse_args(argv)
    if args.list:
        list_areas()
        return 0
    try:
        adapters = registry.select(args.areas)
    except ValueError as e:
        print(f"run.py: {e}", file=sys.stderr)
        return 2
    work, temporary = None, False
    if args.from_results:
        try:
            src = results.load(args.from_results, args.gpu, {a.area for a in adapters})
        except ValueError as e:
            print(f"run.py: {e}", file=sys.stderr)
            return 2
        status = loaded_status(src, adapters)
    else:
        src, status, work, temporary = run_areas(args, adapters)
    rows, failures = results.normalize(src.raw, src.notes)
    for area, message in failures.items():
        status[area].update(status="failed", message=f"normalizing {message}")

    comparison = None
    if args.compare:
        try:
            prev = results.load([args.compare], areas={a.area for a in adapters})
        except (OSError, ValueError) as e:
            print(f"run.py: --compare {args.compare}: {e}", file=sys.stderr)
            return 2
        comparison = compare.compare(rows, results.normalize(prev.raw)[0], args.noise)
        comparison["against"] = args.compare
    print_report(rows, status, src.notes, adapters, comparison, args.compare)

    cuda = src.meta.get("device") != "cpu"
    out = args.out or (RESULTS_DIR if cuda else None)
    src.meta["quick"] = bool(args.quick or src.meta.get("quick"))
    name = src.stem + ("-quick" if src.meta["quick"] else "")
    if out:
        argv = sys.argv[1:] if argv is None else argv
        settings = {"quick": args.quick, "areas": [a.area for a in adapters], "argv": argv}
        data = results.combined(src.meta, src.stem, status, rows, src.raw, comparison, settings)
        print(f"\nwrote {results.write(data, out, name + '.json')}")
        if not args.no_charts:
            roofs = {a.area: a.roofline for a in adapters if a.roofline}
            _, message = charts.render(
                rows, os.path.join(out, "charts"), name, src.meta["gpu"], roofs
            )
            print(message)
    else:
        print("\n(CPU run: no combined JSON written; pass --out DIR to write one)")

    failed = [a for a, s in status.items() if s["status"] in ("failed", "timeout")]
    for area in failed:
        log = status[area].get("log")
        print(f"\n{area} {status[area]['status']}: {status[area]['message']}", file=sys.stderr)
        if log:
            tail = "\n".join("  | " + line for line in runner.log_tail(log, 15))
            print(f"  last lines of {log}:\n{tail}", file=sys.stderr)
    rc = 1 if failed else 0
    if args.fail_on_regression and comparison and comparison["regressions"]:
        rc |= 2
    if temporary and not failed:
        shutil.rmtree(work, ignore_errors=True)
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
