#pragma once
// What tracing a fused function records: an expression graph, one node per input, literal,
// elementwise operation or reduction, in the order the function made them (so every node's
// operands come before it), and the in-place updates of array arguments it asked for. Dtypes
// follow the ready operations' rules (op_rules.hpp) and reductions' recipes
// (reduction_recipes.hpp) as each node is made, so a FusionError points at the operation at
// fault. How the graph becomes kernels is fuse_plan.hpp's.

#include "core/signature.hpp"
#include "elementwise/op_rules.hpp"
#include "kiln/fuse.hpp"
#include "reduction/reduction_recipes.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln::detail {

/// The signature a fused function is traced for: per argument its dtype, whether it is a scalar
/// and its number of dimensions. Compared and hashed by its bytes (signature.hpp).
struct FuseSignature {
    struct Operand {
        DType dtype;
        std::uint8_t scalar;
        std::uint8_t ndim;
    };
    std::uint8_t count = 0;
    std::array<Operand, FusedCore::kMaxArgs> operands{};

    std::size_t used_bytes() const noexcept { return 1 + count * sizeof(Operand); }
    bool operator==(const FuseSignature& other) const noexcept {
        return same_signature(*this, other);
    }
};
static_assert(sizeof(FuseSignature::Operand) == 3 && offsetof(FuseSignature, operands) == 1,
              "FuseSignature is hashed by its bytes: no padding");

struct FuseNode {
    enum class Kind : std::uint8_t { input, literal, operation, reduction };
    Kind kind = Kind::input;
    DType dtype = DType::float32;
    bool weak = false;    // made of C++ scalars alone
    bool array = false;   // depends on an array argument
    bool reduced = false; // a reduction, or depends on one
    int ndim = 0;
    int arg = -1;       // input: the argument's index
    Scalar literal{0};  // literal: its value
    ElementwiseOp op{}; // operation
    OpTypes types{};    // operation: result and compute types
    std::array<int, 3> operands{{-1, -1, -1}};
    int operand_count = 0;
    std::optional<ReductionRecipe> recipe; // reduction
    Axes axis;
    bool keepdims = false;
    std::string name; // how source and messages name it: in0, t3, 2.5f
    std::string text; // the expression, e.g. "in0 - in1", "sum(t2, axis=-1)"
};

/// @p s as C++ source of its own type, exactly (floating values round-trip).
std::string literal_text(const Scalar& s);

class FusionTrace {
  public:
    FusionTrace(const std::string& fused_name, const FuseSignature& signature);

    /// "kiln::fuse 'name'", how messages start.
    std::string who() const { return "kiln::fuse '" + m_name + "'"; }
    [[noreturn]] void refuse(const std::string& what) const;

    fusion::Var var(int id) { return fusion::Var(this, id); }
    static int id_of(const fusion::Var& v) { return v.m_id; }
    static FusionTrace* trace_of(const fusion::Var& v) { return v.m_trace; }
    const FuseNode& node(int id) const { return m_nodes[static_cast<std::size_t>(id)]; }

    /// The node of @p operand, a literal made a node first.
    int operand(const FuseOperand& operand);
    int add(FuseNode node);
    void output(const fusion::Var& v);
    /// Node @p id stands for array argument @p arg from now on (an update of it).
    void set_alias(int id, int arg) { m_alias[static_cast<std::size_t>(id)] = arg; }
    /// The array argument node @p id stands for, or -1.
    int alias(int id) const {
        return static_cast<std::size_t>(id) < m_alias.size() ? m_alias[static_cast<std::size_t>(id)]
                                                             : -1;
    }
    /// Argument @p arg is written with node @p id when the function has run (the last wins).
    void update(int arg, int id);

    const std::vector<FuseNode>& nodes() const { return m_nodes; }
    /// Which nodes the values @p roots need, by node id: the roots and everything they read.
    std::vector<bool> needed_by(const std::vector<int>& roots) const;
    const std::vector<int>& outputs() const { return m_outputs; }
    /// The updates, (argument, node), in the order of their arguments' first updates.
    const std::vector<std::pair<int, int>>& updates() const { return m_updates; }
    const FuseSignature& signature() const { return m_signature; }
    const std::string& name() const { return m_name; }

  private:
    std::string m_name;
    FuseSignature m_signature;
    std::vector<FuseNode> m_nodes;
    std::vector<int> m_outputs;
    std::vector<std::pair<int, int>> m_updates;
    std::vector<int> m_alias; // per node: the array argument it stands for, or -1
};

} // namespace kiln::detail
