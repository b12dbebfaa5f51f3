"""The VideoAtlas environment: video access, grid geometry, rendering, subtitles, synthetic videos."""
