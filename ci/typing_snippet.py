"""A user's code, type-checked against fastblock's types (ci/typing.sh):
every front door, collate and the thread settings, as the README calls
them. mypy reads fastblock's py.typed, its .py sources and the .pyi stubs
of its compiled modules."""
import numpy as np

import fastblock as fb

x = np.arange(2 * 8 * 4 * 4, dtype=np.float32).reshape(2, 8, 4, 4)
image = np.zeros((4, 6, 3), np.uint8)

results: list[np.ndarray] = [
    fb.space_to_depth(x, 2),
    fb.space_to_depth(x, 2, "depth_first", "NCHW", num_threads=1),
    fb.depth_to_space(x, 2, mode="CRD", dtype=np.float16),
    fb.tile(x, (1, 2, 1, 1), out=np.empty((2, 16, 4, 4), np.float32)),
    fb.transpose(image, (2, 0, 1), dtype=np.float32, scale=1 / 255, offset=-0.5),
    fb.pixel_shuffle(x, 2),
    fb.pixel_unshuffle(x, 2, data_format="channels_first"),
    fb.space_to_batch(x, [1, 1, 2, 2], [0, 0, 0, 0], [0, 0, 0, 0]),
    fb.batch_to_space(x, [1, 1, 1, 1], [0, 0, 0, 0], [0, 0, 0, 0]),
    fb.rearrange(x, "b c (h p) w -> b c h p w", p=2),
    fb.repeat(image, "h w c -> h (w r) c", r=2),
    fb.collate([image, image], fb.transpose, (2, 0, 1), dtype=np.float32),
]
threads: int = fb.get_num_threads()
fb.set_num_threads(threads)
openmp: bool = fb.HAVE_OPENMP
version: str = fb.__version__
try:
    fb.rearrange(x, "b c h w -> b h w")
except fb.PatternError as error:
    message: str = str(error)
