// A small multi-threaded inference service on the scheduler. Two tenants share the default
// device: "online" (Guaranteed: its memory is reserved, its tasks are admitted first and run on
// the most urgent stream) and "batch" (Best-effort: it runs on what is left and is paced while
// online work runs). Each tenant serves one linear layer, y = x @ W + b, with weights uploaded
// once; client threads send requests in a closed loop (one in flight per client, so a request's
// latency is what its caller sees). One result per tenant is checked against a float64 host
// reference, so a wrong answer fails the program (it runs as the CTest example_inference_service).
//
//   inference_service [--requests N] [--size S]
//     N: requests per client thread (default 200); S: online matrix size (default 128; batch: 2 S)
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pygpukit.h"

namespace {

using namespace pygpukit;

// One tenant of the service and the model it serves.
struct Tenant {
  TenantOptions options;
  int64_t size = 0;  // x, W: size x size; b: size (broadcast over the rows of x @ W)
  int clients = 0;
  int64_t timeout_ns = 0;  // an SLO: a request not admitted by then is rejected, not served late
  std::vector<float> w_host, b_host;
  GPUArray w, b;
  // The first completed request of client 0, kept for the host check, and the first failure.
  std::mutex mu;
  std::vector<float> check_x;
  GPUArray check_y;
  absl::Status failure;
  std::atomic<int64_t> submitted{0};
};

std::vector<float> RandomFloats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Random weights, uploaded once before any task runs: tasks read them from their own streams,
// which the scheduler orders after the work queued on the default stream (the upload).
absl::Status LoadModel(Tenant& t, Device dev, uint32_t seed) {
  t.w_host = RandomFloats(t.size * t.size, seed);
  t.b_host = RandomFloats(t.size, seed + 1);
  PGK_ASSIGN_OR_RETURN(t.w, ops::FromHost(t.w_host.data(), {t.size, t.size}, DType::Float32, dev));
  PGK_ASSIGN_OR_RETURN(t.b, ops::FromHost(t.b_host.data(), {t.size}, DType::Float32, dev));
  return absl::OkStatus();
}

// One client: `requests` tasks, each uploading its input and computing y = x @ W + b on the
// tenant's stream under the tenant's quota. Rejected and failed tasks are counted by the
// scheduler (stats()); only a scheduler API error ends the client early.
absl::Status RunClient(Scheduler& s, Tenant& t, int client, int requests) {
  const std::string& name = t.options.name;
  for (int r = 0; r < requests; ++r) {
    auto x = std::make_shared<std::vector<float>>(
        RandomFloats(t.size * t.size, static_cast<uint32_t>(1000 * client + r)));
    auto y = std::make_shared<GPUArray>();  // written by the task, read once it is Completed
    TaskOptions opt;
    opt.name = absl::StrCat(name, "/", client, "/", r);
    opt.memory = 3 * t.size * t.size * 4;  // x, x @ W and y: what admission reserves for it
    opt.timeout_ns = t.timeout_ns;
    const Tenant* model = &t;
    auto body = [model, x, y]() -> absl::Status {
      const int64_t n = model->size;
      PGK_ASSIGN_OR_RETURN(GPUArray xd,
                           ops::FromHost(x->data(), {n, n}, DType::Float32, model->w.device()));
      PGK_ASSIGN_OR_RETURN(GPUArray xw, ops::Matmul(xd, model->w));
      PGK_ASSIGN_OR_RETURN(*y, ops::Add(xw, model->b));
      return absl::OkStatus();
    };
    PGK_ASSIGN_OR_RETURN(std::shared_ptr<Task> task, s.Submit(name, body, opt));
    t.submitted.fetch_add(1);
    task->Wait();
    std::lock_guard<std::mutex> l(t.mu);
    if (task->state() == TaskState::kFailed && t.failure.ok()) t.failure = task->status();
    if (client == 0 && task->state() == TaskState::kCompleted && !t.check_y.valid()) {
      t.check_x = *x;
      t.check_y = *y;
    }
  }
  return absl::OkStatus();
}

// Compares the kept result with x @ W + b in float64; the bound covers float32 rounding of a
// length-`size` dot product (cancellation included, via the sum of absolute products).
absl::Status CheckResult(Tenant& t) {
  const std::string& name = t.options.name;
  if (!t.check_y.valid()) return RuntimeError(absl::StrCat(name, ": no completed request"));
  const int64_t n = t.size;
  std::vector<float> y(n * n);
  PGK_RETURN_IF_ERROR(ops::ToHost(t.check_y, y.data()));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = t.b_host[j], mag = std::fabs(t.b_host[j]);
      for (int64_t k = 0; k < n; ++k) {
        const double p = double(t.check_x[i * n + k]) * t.w_host[k * n + j];
        want += p;
        mag += std::fabs(p);
      }
      if (std::fabs(y[i * n + j] - want) > 1e-5 * (1 + mag) * std::sqrt(double(n))) {
        return RuntimeError(absl::StrCat(name, ": wrong result at (", i, ", ", j,
                                         "): ", y[i * n + j], " vs ", want));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ParseArgs(int argc, char** argv, int* requests, int64_t* size) {
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--requests") == 0 && has_value) {
      *requests = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--size") == 0 && has_value) {
      *size = std::atoll(argv[++i]);
    } else {
      return ValueError(absl::StrCat("unknown or incomplete argument '", argv[i],
                                     "'; usage: inference_service [--requests N] [--size S]"));
    }
  }
  if (*requests < 1 || *size < 1) return ValueError("--requests and --size must be positive");
  return absl::OkStatus();
}

absl::Status Run(int argc, char** argv) {
  int requests = 200;
  int64_t size = 128;
  PGK_RETURN_IF_ERROR(ParseArgs(argc, argv, &requests, &size));

  // Declared before the scheduler, so that it (and every task reading the models) ends first.
  Tenant online, batch;
  const Device dev = Runtime::Get().default_device();
  SchedulerOptions options;  // defaults: the default device, 4 worker threads
  PGK_ASSIGN_OR_RETURN(std::unique_ptr<Scheduler> s, Scheduler::Create(options));

  // Online: a reserved 256 MiB (its limit too); best-effort batch reserves nothing and borrows
  // what no tenant has reserved.
  online.options.name = "online";
  online.options.qos = QosClass::kGuaranteed;
  online.options.memory_request = int64_t{256} << 20;
  online.size = size;
  online.clients = 4;
  online.timeout_ns = 2'000'000'000;
  batch.options.name = "batch";
  batch.options.qos = QosClass::kBestEffort;
  batch.size = 2 * size;
  batch.clients = 2;
  Tenant* tenants[] = {&online, &batch};
  for (Tenant* t : tenants) {
    PGK_RETURN_IF_ERROR(s->AddTenant(t->options));
    PGK_RETURN_IF_ERROR(LoadModel(*t, dev, t == &online ? 1 : 2));
  }

  const int64_t start = Scheduler::Now();
  std::vector<std::thread> threads;
  std::vector<absl::Status> errors(online.clients + batch.clients);
  int slot = 0;
  for (Tenant* t : tenants) {
    for (int c = 0; c < t->clients; ++c, ++slot) {
      threads.emplace_back([&, t, c, slot] { errors[slot] = RunClient(*s, *t, c, requests); });
    }
  }
  for (std::thread& th : threads) th.join();
  PGK_RETURN_IF_ERROR(s->Drain());
  const double seconds = (Scheduler::Now() - start) / 1e9;
  for (const absl::Status& e : errors) PGK_RETURN_IF_ERROR(e);

  const SchedulerStats stats = s->stats();
  std::printf("device %s, %d workers, %.2f s\n", dev.ToString().c_str(), options.worker_threads,
              seconds);
  std::printf("%-7s %-12s %5s %8s %9s %6s %8s %9s %9s %9s %8s\n", "tenant", "class", "size",
              "requests", "completed", "failed", "rejected", "p50_us", "p90_us", "p99_us", "req/s");
  for (Tenant* t : tenants) {
    for (const TenantStats& ts : stats.tenants) {
      if (ts.admission.name != t->options.name) continue;
      const TenantAdmissionStats& a = ts.admission;
      std::printf("%-7s %-12s %5ld %8ld %9ld %6ld %8ld %9.0f %9.0f %9.0f %8.1f\n", a.name.c_str(),
                  std::string(QosClassName(a.qos)).c_str(), static_cast<long>(t->size),
                  static_cast<long>(t->submitted.load()), static_cast<long>(a.completed),
                  static_cast<long>(a.failed), static_cast<long>(a.rejected), ts.total_us.p50,
                  ts.total_us.p90, ts.total_us.p99, a.completed / seconds);
    }
  }
  for (Tenant* t : tenants) {
    PGK_RETURN_IF_ERROR(t->failure);  // a failed task is a bug here, not load
    PGK_RETURN_IF_ERROR(CheckResult(*t));
  }
  std::printf("results checked against a float64 host reference: OK\n");
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  absl::Status s = Run(argc, argv);
  if (!s.ok()) {
    std::fprintf(stderr, "inference_service: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
