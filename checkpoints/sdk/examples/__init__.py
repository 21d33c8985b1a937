"""Runnable examples of the SDK (each reads CAIRN_URL and CAIRN_API_KEY); the tests run every one of them
against a live server."""
