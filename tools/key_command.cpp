// `kiln key generate NAME [--comment TEXT]`: an Ed25519 key pair for signed cache entries. NAME
// gets the private key (PEM, mode 0600), NAME.pub its public line, which goes into the readers'
// KILN_TRUSTED_KEYS file; the writer (a CI job) sets KILN_SIGNING_KEY_FILE=NAME.

#include "commands.hpp"
#include "output.hpp"

#include "kiln/cache/signing.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

namespace kiln::tools {

namespace {

struct KeyArgs {
    std::string name;
    std::string comment;
    bool json = false;
};

// "user@host", as ssh-keygen's default comment.
std::string default_comment() {
    std::string user = "unknown";
    if (const passwd* pw = ::getpwuid(::geteuid()); pw && pw->pw_name) user = pw->pw_name;
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    return user + "@" + (host[0] ? host : "localhost");
}

void run_generate(const KeyArgs& args) {
    set_json_errors(args.json);
    const auto key =
        cache::SigningKey::generate(args.comment.empty() ? default_comment() : args.comment);
    key.save(args.name);
    const std::string line = cache::format_public_key(key.public_key());
    if (args.json) {
        print_json({{"private_key", args.name},
                    {"public_key", args.name + ".pub"},
                    {"line", line},
                    {"fingerprint", cache::fingerprint(key.public_key().bytes)}});
        return;
    }
    std::printf("wrote the private key %s (mode 0600) and the public key %s.pub (%s)\n"
                "writers:  KILN_SIGNING_KEY_FILE=%s\n"
                "readers:  add this line to the file KILN_TRUSTED_KEYS names:\n%s\n",
                args.name.c_str(), args.name.c_str(),
                cache::fingerprint(key.public_key().bytes).c_str(), args.name.c_str(),
                line.c_str());
}

} // namespace

void add_key_command(CLI::App& app) {
    auto* key = app.add_subcommand("key", "Keys that sign cache entries (KILN_SIGNING_KEY_FILE, "
                                          "KILN_TRUSTED_KEYS)");
    key->require_subcommand(1);
    auto args = std::make_shared<KeyArgs>();
    auto* generate = key->add_subcommand(
        "generate", "Write an Ed25519 key pair: NAME (private, mode 0600) and NAME.pub");
    generate->add_option("name", args->name, "where the private key goes (must not exist)")
        ->required();
    generate->add_option("--comment", args->comment,
                         "the comment of the public key's line (default: user@host)");
    generate->add_flag("--json", args->json, "print a JSON object");
    generate->callback([args] { run_generate(*args); });
}

} // namespace kiln::tools
