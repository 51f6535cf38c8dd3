// The per-operand state of a call (operand_slots.hpp) and the loop collapse every generated
// kernel's layout starts from (operands.hpp), checked on the host without a device.

#include "core/operand_slots.hpp"
#include "core/operands.hpp"

#include <gtest/gtest.h>

#include <utility>

namespace {

using kiln::Dims;
using kiln::detail::OperandSet;
using kiln::detail::OperandSlots;
using kiln::detail::OperandStrides;

struct Counted {
    static inline int alive = 0;
    static inline int made = 0;
    int value = 0;
    Counted() {
        ++alive;
        ++made;
    }
    Counted(const Counted& other)
        : value(other.value) {
        ++alive;
        ++made;
    }
    Counted& operator=(const Counted&) = default;
    ~Counted() { --alive; }
};

TEST(OperandSlots, ConstructsOnlyTheOperandsUsedAndDestroysThem) {
    Counted::alive = Counted::made = 0;
    {
        OperandSlots<Counted> slots;
        EXPECT_EQ(Counted::made, 0);
        slots[3].value = 7;
        slots[31].value = 9;
        slots[3].value += 1;
        EXPECT_EQ(Counted::made, 2);
        const OperandSlots<Counted>& view = slots;
        EXPECT_EQ(view[3].value, 8);
        EXPECT_EQ(view[31].value, 9);
        EXPECT_EQ(view[5].value, 0);  // never made: a default value, and still not made
        EXPECT_EQ(Counted::alive, 3); // the two, and the shared default
        const OperandSlots<Counted> copy = slots;
        EXPECT_EQ(copy[3].value, 8);
        EXPECT_EQ(Counted::alive, 5);
        OperandSlots<Counted> assigned;
        assigned[7].value = 1;
        assigned = copy; // takes copy's operands only: slot 7 is gone
        EXPECT_EQ(assigned[31].value, 9);
        EXPECT_EQ(std::as_const(assigned)[7].value, 0);
        EXPECT_EQ(Counted::alive, 7);
    }
    EXPECT_EQ(Counted::alive, 1); // only the function-local default is left
}

TEST(CollapseAxes, MergesContiguousAxesAndDropsUnitOnes) {
    Dims shape{2, 1, 3, 4};
    OperandStrides strides;
    strides[0] = Dims{12, 12, 4, 1};
    strides[2] = Dims{12, 0, 4, 1};
    OperandSet walkers;
    walkers[0] = walkers[2] = true;
    kiln::detail::collapse_axes(shape, strides, walkers, true);
    EXPECT_EQ(shape, (Dims{24}));
    EXPECT_EQ(strides[0], (Dims{1}));
    EXPECT_EQ(strides[2], (Dims{1}));
}

TEST(CollapseAxes, KeepsAxesAnOperandWalksOutOfOrder) {
    // Operand 1 is a transpose (strides 1, 3): no merge; operand 0 alone would merge.
    Dims shape{3, 4};
    OperandStrides strides;
    strides[0] = Dims{4, 1};
    strides[1] = Dims{1, 3};
    OperandSet walkers;
    walkers[0] = walkers[1] = true;
    kiln::detail::collapse_axes(shape, strides, walkers, true);
    EXPECT_EQ(shape, (Dims{3, 4}));
    EXPECT_EQ(strides[0], (Dims{4, 1}));
    EXPECT_EQ(strides[1], (Dims{1, 3}));
}

TEST(CollapseAxes, MergesOnlyWhereABroadcastAllows) {
    // A row broadcast over (2, 3, 4): axes 1 and 2 merge for both, axis 0 not for the row.
    Dims shape{2, 3, 4};
    OperandStrides strides;
    strides[0] = Dims{12, 4, 1};
    strides[1] = Dims{0, 4, 1};
    OperandSet walkers;
    walkers[0] = walkers[1] = true;
    kiln::detail::collapse_axes(shape, strides, walkers, true);
    EXPECT_EQ(shape, (Dims{2, 12}));
    EXPECT_EQ(strides[0], (Dims{12, 1}));
    EXPECT_EQ(strides[1], (Dims{0, 1}));
}

TEST(CollapseAxes, WithoutMergingDropsOnlyUnitAxes) {
    Dims shape{1, 5, 1, 2};
    OperandStrides strides;
    strides[4] = Dims{10, 2, 2, 1};
    OperandSet walkers;
    walkers[4] = true;
    kiln::detail::collapse_axes(shape, strides, walkers, false);
    EXPECT_EQ(shape, (Dims{5, 2}));
    EXPECT_EQ(strides[4], (Dims{2, 1}));
}

TEST(NeedsIndex64, LooksAtEveryWalkerAndNoOther) {
    const Dims shape{2, 1 << 20};
    OperandStrides strides;
    strides[0] = Dims{1 << 20, 1};
    strides[1] = Dims{std::int64_t{1} << 31, 1}; // its last element lies past 2^31
    OperandSet walkers;
    walkers[0] = true;
    EXPECT_FALSE(kiln::detail::needs_index64(std::int64_t{2} << 20, shape, strides, walkers));
    walkers[1] = true;
    EXPECT_TRUE(kiln::detail::needs_index64(std::int64_t{2} << 20, shape, strides, walkers));
}

} // namespace
