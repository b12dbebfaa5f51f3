"""The VideoAtlas world every agent moves through: video access, grid geometry, frame plans, rendering, sound.

Reading a video (:mod:`.video`, the decoders in :mod:`.readers`, several files as one in :mod:`.concat`),
the grid's geometry (:mod:`.geometry`) and the frames a view needs (:mod:`.plan`, :mod:`.frames`,
:mod:`.keyframes`), drawing views (:mod:`.render`, cached on disk by content: :mod:`.cache`) behind
:class:`~.atlas.VideoAtlas`, and a video's subtitles (:mod:`.subtitles`) and sound track (:mod:`.audio`).
The synthetic test videos are not part of it: they live in :mod:`videoatlas.synth`.
"""
