"""VideoSeek: a text-only planner that looks at the video only through tools (overview, skim, focus) (paper 004)."""
