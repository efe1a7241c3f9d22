"""Writes numpy_fft_cases.npz for tests/fft.rs: inputs and what numpy.fft
gives for them, each case `NAME_in` and `NAME_out` (complex64 or float32;
NumPy computes in double precision, the file keeps single). Run from
tests/data with `python3 make_fft_cases.py` (NumPy 2.4 wrote the committed
file). tests/fft.rs runs the same op on each `NAME_in`."""
import numpy as np

rng = np.random.default_rng(7)


def real(*shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


def cplx(*shape):
    return (real(*shape) + 1j * real(*shape)).astype(np.complex64)


cases = {}


def case(name, x, y):
    cases[name + "_in"] = x
    y = np.asarray(y)
    cases[name + "_out"] = y.astype(np.complex64 if np.iscomplexobj(y) else np.float32)


x = cplx(3, 60); case("fft_rows", x, np.fft.fft(x))
x = cplx(2, 17); case("fft_prime", x, np.fft.fft(x))
x = cplx(97); case("fft_prime_97", x, np.fft.fft(x))
x = cplx(4, 12); case("ifft_ortho", x, np.fft.ifft(x, norm="ortho"))
x = cplx(4, 12); case("ifft_forward", x, np.fft.ifft(x, norm="forward"))
x = real(5, 6); case("fft_pad_axis0", x, np.fft.fft(x, n=10, axis=0))
x = real(5, 6); case("fft_crop", x, np.fft.fft(x, n=4))
x = real(4, 30); case("rfft_even", x, np.fft.rfft(x))
x = real(3, 31); case("rfft_odd", x, np.fft.rfft(x))
x = real(3, 20); case("rfft_crop_ortho", x, np.fft.rfft(x, n=16, norm="ortho"))
x = cplx(3, 9); case("irfft_default", x, np.fft.irfft(x))
x = cplx(3, 9); case("irfft_odd", x, np.fft.irfft(x, n=17))
x = cplx(2, 5); case("irfft_pad_forward", x, np.fft.irfft(x, n=14, norm="forward"))
x = cplx(8, 12); case("fft2", x, np.fft.fft2(x))
x = cplx(8, 12); case("ifft2", x, np.fft.ifft2(x))
x = real(6, 10); case("rfft2", x, np.fft.rfft2(x))
x = cplx(6, 6); case("irfft2", x, np.fft.irfft2(x))
x = cplx(3, 4, 5); case("fftn_all", x, np.fft.fftn(x))
x = real(2, 3, 4); case("rfftn_axes", x, np.fft.rfftn(x, axes=(0, 2)))
# Lengths past one GPU kernel's line: the four-step algorithm (12288 =
# 2048 x 6, 8192), Bluestein's around it (4099 is prime) and a large prime
# times a small one (3 x 1031).
x = cplx(12288); case("fft_long_smooth", x, np.fft.fft(x))
x = cplx(1, 8192); case("ifft_long_pow2", x, np.fft.ifft(x))
x = cplx(4099); case("fft_long_prime", x, np.fft.fft(x))
x = real(2, 3 * 1031); case("rfft_long_mixed", x, np.fft.rfft(x))
x = cplx(2, 2049); case("irfft_long", x, np.fft.irfft(x))
x = np.arange(7, dtype=np.float32); case("fftshift_odd", x, np.fft.fftshift(x))
x = np.arange(12, dtype=np.float32).reshape(3, 4); case("ifftshift_2d", x, np.fft.ifftshift(x))
cases["fftfreq_7_half"] = np.fft.fftfreq(7, 0.5).astype(np.float32)
cases["fftfreq_8"] = np.fft.fftfreq(8).astype(np.float32)
cases["rfftfreq_9_tenth"] = np.fft.rfftfreq(9, 0.1).astype(np.float32)
# Inverse transforms of real input (once conjugated on the CPU, issue 44):
# every norm, one axis, two, all, and a repeated-looking axis set.
for norm in ("backward", "ortho", "forward"):
    x = real(3, 10); case(f"ifft_real_{norm}", x, np.fft.ifft(x, norm=norm))
x = real(7, 4); case("ifft_real_axis0", x, np.fft.ifft(x, axis=0))
x = real(4, 6); case("ifft2_real", x, np.fft.ifft2(x))
x = real(2, 3, 5); case("ifftn_real_all", x, np.fft.ifftn(x, norm="ortho"))
x = real(3, 4, 5); case("ifftn_real_axes", x, np.fft.ifftn(x, axes=(0, 2)))
x = real(5, 9); case("ifft_real_pad", x, np.fft.ifft(x, n=12))
# An axis given twice: NumPy applies irfftn's inverses in the order given,
# fftn's and rfftn's complex ones in reverse, so the sizes differ.
x = cplx(4, 4); case("irfftn_repeated", x, np.fft.irfftn(x, s=(3, 5, 6), axes=(0, 0, 1)))
x = real(4, 4); case("rfftn_repeated", x, np.fft.rfftn(x, s=(3, 5, 6), axes=(0, 0, 1)))
x = cplx(4, 4); case("fftn_repeated", x, np.fft.fftn(x, s=(3, 5, 6), axes=(0, 0, 1)))
# Repeated axes without sizes: every length is the input's, so the half
# spectrum of the real transform is padded back for the later ones.
x = real(4, 6); case("rfftn_repeated_default", x, np.fft.rfftn(x, axes=(1, 1)))
x = real(5, 4); case("rfftn_repeated_default_3", x, np.fft.rfftn(x, axes=(1, 0, 1)))
np.savez_compressed("numpy_fft_cases.npz", **cases)
