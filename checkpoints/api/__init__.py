"""The REST API (docs/api/index.md): serializers validate, views glue them to services."""
