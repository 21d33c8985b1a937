"""Dashboard views: small functions that fetch and render; actions call one service each."""
