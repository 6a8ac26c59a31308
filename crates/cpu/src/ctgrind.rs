//! Constant-time checks under Valgrind's memcheck (the "ctgrind" technique of Adam Langley):
//! a test marks the bytes of a secret as *undefined* with [`secret`], runs the operation, and
//! marks its public outputs defined again with [`public`]. Memcheck tracks definedness bit by
//! bit through every instruction and reports a conditional jump or move, or a memory address,
//! that depends on undefined bits: a branch or a table index that depends on the secret.
//! Library code marks values that are public by design although computed from secrets (a
//! length, a verdict, an output about to be sent) with [`declassify`] or [`public`].
//!
//! The requests are compiled in only with `--cfg obliv_ctgrind` (the build `.ci/ctgrind` runs
//! under `valgrind --error-exitcode=1`, without debug assertions, which branch on the values
//! they check); everywhere else every function here is a no-op and the tests check results
//! only. `.ci/ctgrind` first checks that a deliberate secret-dependent branch
//! ([`leaky_branch`]) is reported.
//!
//! Valgrind emulates no AVX-512 and hides ADX, so under it the code takes its AVX2, BMI2 and
//! portable paths; the AVX-512 kernels are covered by the crates' trace tests instead.

/// Memcheck's request codes (`memcheck.h`: `VG_USERREQ_TOOL_BASE('M', 'C')` plus the offset).
const MAKE_MEM_UNDEFINED: usize = 0x4d43_0001;
const MAKE_MEM_DEFINED: usize = 0x4d43_0002;
/// The core's `VG_USERREQ__RUNNING_ON_VALGRIND` (`valgrind.h`).
const RUNNING_ON_VALGRIND: usize = 0x1001;

/// A Valgrind client request (`valgrind.h`'s `VALGRIND_DO_CLIENT_REQUEST_EXPR` for amd64):
/// returns `default` when not running under Valgrind.
#[cfg(all(obliv_ctgrind, target_arch = "x86_64"))]
fn request(default: usize, code: usize, a1: usize, a2: usize) -> usize {
    let args: [usize; 6] = [code, a1, a2, 0, 0, 0];
    let mut result = default;
    // SAFETY: the four rotations of `rdi` add up to 128 bits and leave it unchanged, and
    // `xchg rbx, rbx` changes nothing: on hardware the sequence only sets flags (not declared
    // preserved). Under Valgrind it is the marker of a client request, which reads the six
    // words at `rax` (alive for the call) and writes its answer to `rdx`.
    unsafe {
        core::arch::asm!(
            "rol rdi, 3",
            "rol rdi, 13",
            "rol rdi, 61",
            "rol rdi, 51",
            "xchg rbx, rbx",
            inout("rdx") result,
            in("rax") args.as_ptr(),
            options(nostack),
        );
    }
    result
}

/// Without `--cfg obliv_ctgrind`, or off x86_64: no requests.
#[cfg(not(all(obliv_ctgrind, target_arch = "x86_64")))]
#[inline(always)]
fn request(default: usize, _code: usize, _a1: usize, _a2: usize) -> usize {
    default
}

/// Whether this process runs under Valgrind.
pub fn running_on_valgrind() -> bool {
    request(0, RUNNING_ON_VALGRIND, 0, 0) != 0
}

/// Marks the bytes of `v` as secret (undefined for memcheck): any branch or address that
/// depends on them from now on is reported. It takes `&mut` so that the compiler reads the
/// bytes from memory again afterwards (through a shared reference it may keep copies in
/// registers, which would escape the marking).
pub fn secret<T: ?Sized>(v: &mut T) {
    let len = core::mem::size_of_val(v);
    request(
        0,
        MAKE_MEM_UNDEFINED,
        core::ptr::from_mut(v).cast::<u8>() as usize,
        len,
    );
}

/// Marks the bytes of `v` as public again (defined), for results that may be branched on,
/// compared or printed (`&mut` for the reason [`secret`] gives).
pub fn public<T: ?Sized>(v: &mut T) {
    let len = core::mem::size_of_val(v);
    request(
        0,
        MAKE_MEM_DEFINED,
        core::ptr::from_mut(v).cast::<u8>() as usize,
        len,
    );
}

/// `v`, marked public: for a value computed from secrets that is public by design (a
/// length, a verdict). In the checked build it goes through memory, so that no register copy
/// of the secret-derived value is used afterwards; elsewhere it is `v`.
#[must_use]
#[inline(always)]
pub fn declassify<T: Copy>(v: T) -> T {
    #[cfg(obliv_ctgrind)]
    {
        let mut x = v;
        public(&mut x);
        // SAFETY: `x` is a live, aligned local of type `T`.
        unsafe { core::ptr::read_volatile(&raw const x) }
    }
    #[cfg(not(obliv_ctgrind))]
    v
}

/// A deliberate leak for the harness's negative control: the number of leading bytes of
/// `secret` that are zero, found by a loop that stops at the first nonzero byte (a branch
/// on each secret byte). Under memcheck, after [`secret`], this must be reported.
#[inline(never)]
pub fn leaky_branch(secret: &[u8]) -> usize {
    let mut n = 0;
    for &b in secret {
        if core::hint::black_box(b) != 0 {
            break;
        }
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Natively the requests change nothing: the data keep their values, and the process is
    /// not under Valgrind unless started so.
    #[test]
    fn requests_are_no_ops_on_hardware() {
        let mut v = [1u8, 2, 3, 0, 5];
        secret(&mut v[..]);
        public(&mut v[..]);
        assert_eq!(v, [1, 2, 3, 0, 5]);
        assert_eq!(declassify(7u32), 7);
        let _ = running_on_valgrind();
        assert_eq!(leaky_branch(&[0, 0, 7, 0]), 2);
    }

    /// The negative control of `.ci/ctgrind`: under memcheck this must be reported (the loop
    /// of [`leaky_branch`] branches on the secret bytes), or the harness checks nothing.
    #[test]
    #[ignore = "run under valgrind by .ci/ctgrind, which expects a report"]
    fn ctgrind_control_branch_on_a_secret() {
        let mut s = [0u8, 0, 9, 4];
        secret(&mut s[..]);
        let n = declassify(leaky_branch(&s));
        assert_eq!(n, 2);
    }
}
