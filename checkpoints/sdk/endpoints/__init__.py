"""Every API call written once (a request builder per call) and bound as a method of `Client` and
`AsyncClient` both (see `base.request` and `base.endpoint`)."""
