import dataclasses

import pytest

from simperf.hardware import GpuSpec, get_gpu, gpu_keys
from simperf.hardware.catalog import peak_key


def test_catalogue_lists_the_three_gpus():
    assert {"h100", "h200", "b200"} <= set(gpu_keys())
    assert gpu_keys() == sorted(gpu_keys())


def test_unknown_gpu_error_lists_known_keys():
    with pytest.raises(ValueError, match="h100.*h200|b200.*h100"):
        get_gpu("a100x")


@pytest.mark.parametrize("key", ["h100", "h200", "b200"])
def test_every_entry_is_complete_and_plausible(key):
    gpu = get_gpu(key)
    assert isinstance(gpu, GpuSpec) and gpu.key == key
    assert {"bf16", "fp8", "fp32"} <= set(gpu.peak_flops)
    assert gpu.peak_flops["fp8"] == pytest.approx(2 * gpu.peak_flops["bf16"], rel=0.01)
    assert 1e12 < gpu.hbm_bytes_per_s < 1e13
    assert 64 * 2**30 < gpu.memory_bytes < 256 * 2**30
    assert gpu.num_sms >= 132 and gpu.l2_bytes >= 50 * 2**20
    assert gpu.nvlink_bytes_per_s >= 450e9
    if gpu.measured_copy_bytes_per_s is not None:
        assert gpu.measured_copy_bytes_per_s < gpu.hbm_bytes_per_s
    if gpu.measured_bf16_flops is not None:
        assert gpu.measured_bf16_flops < gpu.peak_flops["bf16"]


def test_datasheet_numbers_match_the_brief():
    h100, h200, b200 = get_gpu("h100"), get_gpu("h200"), get_gpu("b200")
    assert h100.hbm_bytes_per_s == 3.35e12 and h200.hbm_bytes_per_s == 4.8e12 and b200.hbm_bytes_per_s == 8e12
    assert h100.peak_flops == h200.peak_flops  # same compute die
    assert h100.peak_flops["bf16"] == pytest.approx(989e12, rel=0.01)
    assert b200.peak_flops["fp4"] == pytest.approx(9e15) and b200.sm == "10.0" and h100.sm == "9.0"
    assert h200.memory_bytes == 143771 * 2**20
    assert h200.measured_copy_bytes_per_s == 4.3e12 and h100.measured_bf16_flops == 798e12


def test_spec_is_immutable():
    with pytest.raises(dataclasses.FrozenInstanceError):
        get_gpu("h100").num_sms = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    ("dtype", "gpu", "expected"),
    [
        ("bf16", "h100", "bf16"),
        ("fp16", "h100", "bf16"),
        ("fp8_e4m3", "h100", "fp8"),
        ("fp4", "b200", "fp4"),
        ("nvfp4", "h100", "fp8"),  # no fp4 tensor cores on Hopper
        ("fp32", "h200", "fp32"),
    ],
)
def test_dtype_maps_to_its_peak(dtype, gpu, expected):
    assert peak_key(dtype, get_gpu(gpu)) == expected


@pytest.mark.parametrize("key", ["h100", "h200", "b200"])
def test_every_memory_figure_names_its_source(key):
    source = get_gpu(key).memory_source
    assert source.startswith(("device:", "typical", "datasheet")), source


def test_b200_memory_is_what_the_device_reports():
    # 183,359 MiB: the total a B200 reports (issue 24); the 180 GB datasheet figure made TP8 KV pools ~13% small
    b200 = get_gpu("b200")
    assert b200.memory_bytes == 183359 * 2**20
    assert b200.memory_source.startswith("device:")
