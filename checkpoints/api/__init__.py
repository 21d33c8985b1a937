"""The REST API (SPEC section 5): serializers validate, views glue them to services."""
