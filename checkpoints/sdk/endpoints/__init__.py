"""Every API method described once, for `Client` and `AsyncClient` both (see `base.endpoint`)."""
