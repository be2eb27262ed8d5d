"""fastblock.torch: torch's DataLoader with the one pass, checked against the
contract's NumPy expression (``reference.converted_ref``) in every worker
mode and start method, with batches kept across epochs, and with workers
that raise or die."""
import gc
import os
import signal
import tracemalloc

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import fastblock.torch as fbt  # noqa: E402
from reference import converted_ref  # noqa: E402

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
SCALE = (1 / (255 * np.array(STD))).reshape(3, 1, 1)
OFFSET = (-np.array(MEAN) / np.array(STD)).reshape(3, 1, 1)
RESULTS = {torch.float32: np.float32, torch.float16: np.float16, torch.float64: np.float64}


class Images(torch.utils.data.Dataset):
    """n uint8 images of h x w x 3, each sample as ``kind`` says: the image,
    (image, label, name) or {"image", "label"}; ``fail_at``: the index
    whose sample raises, ``kill_at``: the one whose worker dies."""

    def __init__(self, n=40, h=9, w=13, kind="tuple", fail_at=None, kill_at=None):
        self.x = np.random.default_rng(n).integers(0, 256, (n, h, w, 3), dtype=np.uint8)
        self.kind, self.fail_at, self.kill_at = kind, fail_at, kill_at

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if i == self.fail_at:
            raise ValueError(f"sample {i} is broken")
        if i == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        if self.kind == "image":
            return self.x[i]
        if self.kind == "dict":
            return {"label": i, "image": self.x[i]}
        return self.x[i], i, f"n{i}"


def expected(dataset, indices, dtype, normalized=True):
    """The batch of ``indices`` as the rule writes it, NCHW."""
    r = dataset.x[indices].transpose(0, 3, 1, 2)
    if dtype is torch.bfloat16:
        import ml_dtypes
        want = converted_ref(r, ml_dtypes.bfloat16, *((SCALE, OFFSET) if normalized else ()))
        return want.view(np.uint16)
    return converted_ref(r, RESULTS[dtype], *((SCALE, OFFSET) if normalized else ()))


def check_batch(images, dataset, indices, dtype, channels_last=False):
    assert isinstance(images, torch.Tensor) and images.dtype == dtype
    assert images.shape == (len(indices), 3) + dataset.x.shape[1:3]
    if channels_last:
        assert images.is_contiguous(memory_format=torch.channels_last)
    got = images.view(torch.int16) if dtype is torch.bfloat16 else images
    want = expected(dataset, indices, dtype)
    got = np.ascontiguousarray(got.numpy())
    assert np.array_equal(got.view(np.uint8), np.ascontiguousarray(want).view(np.uint8))


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("channels_last", [False, True])
def test_batches_are_the_rule(workers, dtype, channels_last):
    """Every batch's bytes are the documented expression's, NCHW or
    channels_last, without and with worker processes (fork)."""
    if dtype is torch.bfloat16:
        pytest.importorskip("ml_dtypes")
    data = Images()
    loader = fbt.DataLoader(data, batch_size=16, num_workers=workers, dtype=dtype, mean=MEAN,
                            std=STD, channels_last=channels_last)
    assert len(loader) == 3
    seen = []
    for images, labels, names in loader:
        check_batch(images, data, labels.numpy(), dtype, channels_last)
        assert names == [f"n{i}" for i in labels.tolist()]
        seen += labels.tolist()
    assert seen == list(range(40))


@pytest.mark.parametrize("kind", ["image", "dict"])
def test_sample_kinds(kind):
    """An image alone, or in a dict beside its label (default_collate's)."""
    data = Images(kind=kind)
    loader = fbt.DataLoader(data, batch_size=8, mean=MEAN, std=STD)
    for k, batch in enumerate(loader):
        indices = np.arange(8 * k, 8 * k + 8)
        if kind == "image":
            check_batch(batch, data, indices, torch.float32)
        else:
            assert list(batch) == ["label", "image"]
            assert torch.equal(batch["label"], torch.as_tensor(indices))
            check_batch(batch["image"], data, indices, torch.float32)


def test_without_mean_and_std_the_values_are_the_pixels():
    data = Images(kind="image")
    (batch,) = list(fbt.DataLoader(data, batch_size=40))
    want = converted_ref(data.x.transpose(0, 3, 1, 2), np.float32)
    assert np.array_equal(batch.numpy(), want)


@pytest.mark.parametrize("workers", [0, 2])
def test_kept_batches_are_never_overwritten(workers):
    """Batches kept (whole, or only a view or a storage of one) stay as
    they were through two more epochs; batches dropped free their buffers
    for the next ones."""
    data = Images()
    loader = fbt.DataLoader(data, batch_size=8, num_workers=workers, mean=MEAN, std=STD,
                            shuffle=True, generator=torch.Generator().manual_seed(1))
    kept, views, storages = [], [], []
    for images, labels, _ in loader:
        kept.append((images, labels))
        views.append((images[2:5, 1], labels[2:5]))
        storages.append((images.untyped_storage(), images.shape, labels))
    kept_views = [(v.clone(), labels) for v, labels in views]
    del kept[1:3]
    pointers = set()
    for _ in range(2):
        for images, labels, _ in loader:
            pointers.add(images.data_ptr())
    for images, labels in kept:
        check_batch(images, data, labels.numpy(), torch.float32)
    for (view, labels), (copy, _) in zip(views, kept_views):
        assert torch.equal(view, copy)
    for storage, shape, labels in storages:
        images = torch.empty(0).set_(storage).view(shape)
        check_batch(images, data, labels.numpy(), torch.float32)
    # Every batch of the first epoch is held: the later epochs took at most
    # two buffers between them (the loop's variable holds the last one).
    assert len(pointers) <= 2


def test_batches_dropped_leave_few_buffers_behind():
    """Every batch of an epoch held, then dropped: the main process's
    collate keeps no more than its few buffers for reuse (NumPy's
    allocations, by tracemalloc), and batches of a new size push out as
    many old ones as they need."""
    data = Images(n=48)
    collate = fbt.Collate(torch.float32, MEAN, STD)

    def batches(size):
        return (collate([data[i] for i in range(start, start + size)])
                for start in range(0, len(data), size))

    tracemalloc.start()
    try:
        kept = [images for images, _, _ in batches(4)]
        batch_bytes = kept[0].numel() * kept[0].element_size()
        assert len(kept) == 12 > fbt._KEPT_BUFFERS
        for i, images in enumerate(kept):
            check_batch(images, data, np.arange(4 * i, 4 * i + 4), torch.float32)
        del kept, images
        gc.collect()
        assert numpy_bytes_traced() == fbt._KEPT_BUFFERS * batch_bytes
        for images, _, _ in batches(6):
            pass
        del images
        # Two buffers alternate for them (the loop's variable holds the
        # last batch as the next is made), in place of two old ones.
        assert numpy_bytes_traced() == 2 * batch_bytes * 6 // 4 \
            + (fbt._KEPT_BUFFERS - 2) * batch_bytes
    finally:
        tracemalloc.stop()


def numpy_bytes_traced():
    snapshot = tracemalloc.take_snapshot().filter_traces(
        [tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)])
    return sum(stat.size for stat in snapshot.statistics("filename"))


def test_staging_buffers_held_are_never_rewritten():
    """A worker writes a staging buffer again only once the main process
    has released the batch it carried. Staged batches held through an
    epoch keep their images (the worker's 8 buffers, then fresh shared
    memory); released as they come, the worker reuses its buffers, and
    persistent workers' buffers stay in use from epoch to epoch, also
    after an epoch broken off."""
    data = Images(n=8 * 12)
    loader = torch.utils.data.DataLoader(data, batch_size=8, num_workers=1,
                                         collate_fn=fbt.Collate(), persistent_workers=True)
    held = list(loader)
    for staged in held:
        images, labels, _ = staged.batch
        assert np.array_equal(images.numpy(), data.x[labels.numpy()])
    sent = sorted(staged._sent for staged in held)
    assert sent == [0] * 4 + [1] * 8            # 8 buffers once each, then fresh ones
    del held, staged, images
    for epoch in range(3):
        counts = []
        for k, staged in enumerate(loader):
            images, labels, _ = staged.batch
            assert np.array_equal(images.numpy(), data.x[labels.numpy()])
            counts.append(staged._sent)
            staged.release()
            if epoch == 1 and k == 4:
                break                           # the batches in flight are freed unreleased
        assert max(counts) > 1 and 0 not in counts


def test_a_buffer_sent_again_travels_by_name():
    """A staging buffer's images travel as a tensor (a file descriptor) the
    first time, then by name: the pickle holds their shape alone and the
    receiver views the buffer it recorded. Small tensors beside them
    (labels) travel in the pickle as arrays and arrive as tensors."""
    from multiprocessing.reduction import ForkingPickler
    import pickle

    ring = fbt._Ring()
    images = [np.full((4, 5, 3), k, np.uint8) for k in range(3)]

    def sent_and_received(images, labels):
        staged, sent, place = ring.stage(images)
        pickled = bytes(ForkingPickler.dumps(fbt.Staged([staged, labels], 0, sent, place)))
        return place, pickled, pickle.loads(pickled)

    place, first, got = sent_and_received(images, torch.tensor([0, 1, 2]))
    assert place[2] and np.array_equal(got.images.numpy(), np.stack(images))
    got.release()
    again = [image + 10 for image in images]
    place, second, got = sent_and_received(again, torch.tensor([3, 4, 5], dtype=torch.int16))
    assert not place[2] and place[:2] == (place[0], 0)
    assert len(second) < 1024 and b"_ByName" in second
    assert np.array_equal(got.images.numpy(), np.stack(again))
    labels = got.batch[1]
    assert isinstance(labels, torch.Tensor) and labels.dtype == torch.int16
    assert labels.tolist() == [3, 4, 5]
    # Sent on again from the process that received it: as a tensor.
    passed_on = pickle.loads(bytes(ForkingPickler.dumps(got)))
    assert np.array_equal(passed_on.images.numpy(), np.stack(again))
    # A second ring's buffer is not this one's, whatever its index.
    other = fbt._Ring()
    staged, sent, other_place = other.stage(images)
    assert other_place[0] != place[0]


@pytest.mark.slow
@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_start_methods(method):
    """spawn and forkserver workers, persistent, with a prefetch factor."""
    data = Images(n=24)
    loader = fbt.DataLoader(data, batch_size=8, num_workers=2, mean=MEAN, std=STD,
                            multiprocessing_context=method, persistent_workers=True,
                            prefetch_factor=3)
    for _ in range(2):
        for images, labels, _ in loader:
            check_batch(images, data, labels.numpy(), torch.float32)


def _shm():
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


def _leaked(before):
    """torch's shared memory files (``torch_<pid>_...``, the only kind the
    loader makes) made since ``before`` by this process or by a process now
    gone: those of other live processes, which may share this machine's
    /dev/shm, are not this test's."""
    def gone_or_mine(name):
        parts = name.split("_")
        if len(parts) < 2 or parts[0] != "torch" or not parts[1].isdigit():
            return False
        pid = int(parts[1])
        return pid == os.getpid() or not os.path.exists(f"/proc/{pid}")
    return sorted(name for name in _shm() - before if gone_or_mine(name))


@pytest.mark.slow
def test_a_worker_that_raises():
    """A sample that raises in a worker gives torch's own error, and leaves
    no shared memory behind (slow: freeing the iterator of a torch
    DataLoader whose worker raised takes torch 5 s a worker, fastblock's
    or not)."""
    before = _shm()
    loader = fbt.DataLoader(Images(fail_at=21), batch_size=8, num_workers=2)
    with pytest.raises(ValueError, match="sample 21 is broken"):
        for _ in loader:
            pass
    del loader
    assert _leaked(before) == []


@pytest.mark.slow
def test_a_worker_that_dies():
    """A worker killed mid-epoch: torch's error, and no shared memory left
    (slow: torch checks its workers' status every 5 s)."""
    before = _shm()
    loader = fbt.DataLoader(Images(kill_at=30), batch_size=8, num_workers=2, timeout=60)
    with pytest.raises(RuntimeError, match="DataLoader worker .* (killed by signal|exited unexpectedly)"):
        for _ in loader:
            pass
    del loader
    assert _leaked(before) == []


@pytest.mark.parametrize("call, error, match", [
    (lambda: fbt.DataLoader(Images(), dtype=torch.int32), TypeError, "dtype must be one of"),
    (lambda: fbt.DataLoader(Images(), mean=MEAN), ValueError, "mean and std go together"),
    (lambda: fbt.DataLoader(Images(), mean=MEAN, std=STD[:2]), ValueError, "one value a channel"),
    (lambda: fbt.DataLoader(Images(), collate_fn=list), TypeError, "makes its own collate_fn"),
])
def test_argument_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_image_errors():
    data = Images()
    data.x = data.x.astype(np.float32)
    with pytest.raises(TypeError, match="images must be uint8"):
        next(iter(fbt.DataLoader(data, batch_size=4)))
    data.x = np.zeros((8, 5, 5), np.uint8)
    with pytest.raises(ValueError, match="must be H, W, C"):
        next(iter(fbt.DataLoader(data, batch_size=4)))


@pytest.mark.filterwarnings("ignore:.*pin_memory.*:UserWarning")
def test_pinned_batches_are_written_in_place(monkeypatch):
    """With pin_memory and CUDA, each batch is written straight into the
    tensor the page-locked allocator gives (stood in for here: this machine
    has no CUDA), and that very tensor is handed out, for every dtype and
    layout. On a CUDA machine: ``images.is_pinned()`` is True for every
    batch of ``fbt.DataLoader(..., pin_memory=True)``."""
    given = []

    def pinned_empty(shape, dtype):
        given.append(torch.empty(shape, dtype=dtype))
        return given[-1]

    monkeypatch.setattr(fbt, "_cuda_available", lambda: True)
    monkeypatch.setattr(fbt, "_pinned_empty", pinned_empty)
    data = Images()
    for dtype in (torch.float32, torch.bfloat16):
        for channels_last in (False, True):
            given.clear()
            loader = fbt.DataLoader(data, batch_size=16, num_workers=0, dtype=dtype, mean=MEAN,
                                    std=STD, channels_last=channels_last, pin_memory=True)
            for images, labels, _ in loader:
                assert images.untyped_storage().data_ptr() == given[-1].untyped_storage().data_ptr()
                check_batch(images, data, labels.numpy(), dtype, channels_last)
            assert len(given) == 3
