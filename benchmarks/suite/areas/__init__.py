"""One module per benchmark area, each defining ADAPTER (a registry.Adapter)."""
