"""The async client's methods, one mixin per area (composed by checkpoints.sdk.aclient.AsyncClient)."""
