"""API views: each parses with an input serializer, calls one service, renders the result."""
