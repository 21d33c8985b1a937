"""The blocking client's methods, one mixin per area (composed by checkpoints.sdk.client.Client)."""
