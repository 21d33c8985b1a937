"""The blocking executor of the API methods (the methods themselves: checkpoints.sdk.endpoints)."""
