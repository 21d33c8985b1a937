"""Dashboard actions: a GET shows what will happen and asks for confirmation; the POST (CSRF-checked) calls
the same service as the API, as the logged-in user, so every action writes its audit event."""
