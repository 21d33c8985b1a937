"""The documentation's examples run against the SDK tests' live server (tests/sdk/conftest.py)."""

from tests.sdk.conftest import cairn_key, cairn_url, make_key, sdk_workspace  # noqa: F401  (fixtures)
