"""Input serializers validate requests; output serializers render responses. One module per concept."""
