"""The REST API (README, "The REST API"): serializers validate, views glue them to services."""
