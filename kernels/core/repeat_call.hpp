#pragma once
// A repeated call launched without being planned again. A generated front end plans each call
// before it launches (binding, broadcasting, the argument checks, strides, the layout and
// the kernel's lookup: most of its host time), yet programs call the same kernel over and over
// with arguments that look the same. Each thread keeps, for the last calls it made, what their
// arguments looked like (a fingerprint) and the launch that came of them: the function, grid and
// block, the packed parameters with the places that take the arguments' addresses and scalar
// values, and the outputs to allocate. A call with a known fingerprint only checks its scalars'
// values, allocates its outputs, patches the parameters and launches.
//
// The fingerprint holds everything planning a call reads except addresses and scalar values:
// the kernel, the context, the options that shape the launch, and per argument its kind, dtype,
// weakness or handle kind, shape, strides, device and address modulo 16 (vector widths). Two
// calls with one fingerprint plan to the same launch and pass the same checks, so a match
// stands for the planning.

#include "kernel_params.hpp"
#include "kiln/array.hpp"
#include "kiln/call_arguments.hpp"
#include "kiln/device.hpp"
#include "kiln/launch.hpp"
#include "kiln/module.hpp"
#include "operands.hpp"
#include "param_writer.hpp"
#include "signature.hpp"

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace kiln::detail {

/// A new id for a kernel object (never 0, never reused), so that a thread's repeat cache cannot
/// confuse a kernel with one made later at the same address.
std::uint64_t new_kernel_id() noexcept;

/// What a call's arguments and options decide about its launch, in 64-bit words.
class CallFingerprint {
  public:
    static constexpr std::size_t kMaxWords = 64;

    /// Starts the fingerprint of a call of kernel @p kernel in @p context with @p count
    /// arguments; the front end adds its options with add(), then the arguments with args().
    void start(std::uint64_t kernel, CUcontext context, std::size_t count) noexcept;
    /// Adds a word; false when the fingerprint is full (the call is then never cached for repeats).
    bool add(std::uint64_t word) noexcept {
        if (m_count == kMaxWords) return false;
        m_words[m_count++] = word;
        return true;
    }
    /// Adds @p count arguments; false when they do not fit.
    bool args(const Arg* args, std::size_t count);

    bool operator==(const CallFingerprint& other) const noexcept;

  private:
    std::uint64_t m_words[kMaxWords];
    std::size_t m_count = 0;
};

/// A launch as a call planned it, ready to be repeated with other addresses and scalar values.
/// Plain data: copied into and out of a thread's repeat cache.
struct RepeatLaunch {
    static constexpr std::size_t kMaxParamBytes = 512;

    CallFingerprint fingerprint;
    const Function* function = nullptr; ///< held by the kernel object; null: not recorded
    Dim3 grid, block;
    std::uint8_t inputs = 0, given = 0, count = 0;
    DType dtypes[kMaxParams] = {};          ///< each operand's bound dtype
    std::uint16_t offsets[kMaxParams] = {}; ///< where its address or scalar value goes in params
    Dims output_shape; ///< of the outputs not given, allocated per call on 16-byte boundaries
    // A reduction's split workspace, leased per call (partials_bytes 0 and counters 0: none).
    std::size_t partial_bytes = 0, counters = 0;
    std::uint16_t partials_offset = 0, counters_offset = 0;
    std::uint16_t param_size = 0;
    alignas(16) unsigned char params[kMaxParamBytes] = {};
};

/// Fills @p record (whose fingerprint is made) from a launch just made with @p f, @p grid and
/// @p block, of @p ops with their parameters packed in @p w (@p size bytes), operand k's address
/// or value at @p offsets[k]. Leaves record.function null when the launch cannot be repeated
/// (parameters too large, an output made off a 16-byte boundary).
void record_launch(RepeatLaunch& record, const Function& f, Dim3 grid, Dim3 block,
                   const Operands& ops, const std::uint16_t* offsets, ParamWriter& w,
                   std::size_t size);

/// Repeats @p r with @p args: checks the scalars' values (an OverflowError as the first call
/// would give), allocates the outputs not given on @p stream, leases a reduction's workspace in
/// @p context, patches the parameters and launches. @p outputs gets the outputs given and made,
/// in order, unless @p return_outputs is false. Returns false, launching nothing, when an output
/// made is not on a 16-byte boundary as the recorded ones were (an application's allocator).
bool repeat_launch(const RepeatLaunch& r, const KernelParams& params, const Arg* args,
                   CUcontext context, StreamRef stream, bool return_outputs, Outputs& outputs);

/// Whether this thread has remembered a launch.
bool has_repeats() noexcept;

/// This thread's cached launch for @p fingerprint, or nullptr.
const RepeatLaunch* find_repeat(const CallFingerprint& fingerprint) noexcept;

/// Keeps @p launch in this thread's repeat cache, in place of its least recently kept entry.
void remember_repeat(const RepeatLaunch& launch);

/// One call's use of the thread's repeat cache, the same for every generated front end: look the
/// call up and repeat it, or launch it planned and remember it. @p Print makes the call's
/// fingerprint
/// (`bool(CallFingerprint&)`: false when it does not fit). A thread that has remembered nothing
/// does not look: the fingerprint reads the current context, which a first call reaches only
/// after its argument checks.
template <class Print> class RepeatCall {
  public:
    /// @p eligible: the call may be cached for repeats (a tuned call is not: its launch follows the
    /// tuning in force).
    RepeatCall(bool eligible, Print print)
        : m_print(std::move(print))
        , m_eligible(eligible) {
        if (m_eligible && has_repeats()) make();
    }

    /// Repeats the call from the repeat cache, in the current context, when it is there
    /// (repeat_launch()); false when it is not, or cannot be repeated, and must be planned.
    bool repeat(const KernelParams& params, const Arg* args, StreamRef stream, bool return_outputs,
                Outputs& outputs) const {
        const RepeatLaunch* known = m_made ? find_repeat(m_fingerprint) : nullptr;
        return known && repeat_launch(*known, params, args, current_context(), stream,
                                      return_outputs, outputs);
    }

    /// Launches the planned call with @p launch(RepeatLaunch* record): with a record to fill,
    /// then remembered, when the call may be cached for repeats; with nullptr otherwise.
    template <class Launch> void launch(Launch&& launch) {
        if (m_eligible && !m_tried) make();
        if (!m_made) {
            launch(static_cast<RepeatLaunch*>(nullptr));
            return;
        }
        // The first call that looks like this in this thread: remembered for the next.
        RepeatLaunch record;
        record.fingerprint = m_fingerprint;
        launch(&record);
        if (record.function) remember_repeat(record);
    }

  private:
    void make() {
        m_tried = true;
        m_made = m_print(m_fingerprint);
    }

    Print m_print;
    CallFingerprint m_fingerprint;
    bool m_eligible, m_tried = false, m_made = false;
};

} // namespace kiln::detail
