"""The uniform-sampling baseline: evenly spaced frames on contact sheets, one call."""
