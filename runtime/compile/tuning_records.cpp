#include "tuning_records.hpp"

#include "kiln/cache/store.hpp"
#include "kiln/compiler.hpp"

namespace kiln::detail {

const cache::TuningStore& tuning_records() {
    static const cache::TuningStore records([] {
        const cache::Store* store = Compiler::global().store();
        if (store) return store->config();
        cache::Config none;
        none.disabled = true;
        return none;
    }());
    return records;
}

} // namespace kiln::detail
