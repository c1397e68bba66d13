package io.vivarium.launcher;

import static io.vivarium.launcher.CliWords.arg;
import static io.vivarium.launcher.CliWords.intOption;
import static io.vivarium.launcher.CliWords.option;
import static io.vivarium.launcher.CliWords.verb;
import static io.vivarium.launcher.SandboxCli.JSON;

import java.io.IOException;
import java.io.PrintStream;
import java.time.Instant;
import java.util.List;

import io.vivarium.client.Fleet;
import io.vivarium.launcher.CliWords.Usage;

/** {@code vivarium node add|ls|revoke|token}: a master's nodes (docs/fleet.md), with the operator token. */
final class NodeCli {
    private final Fleet fleet;
    private final PrintStream out;
    private final boolean json;

    NodeCli(Fleet fleet, PrintStream out, boolean json) {
        this.fleet = fleet;
        this.out = out;
        this.json = json;
    }

    int run(List<String> w) throws Usage, IOException {
        String verb = verb(w);
        return switch (verb) {
            case "add" -> {
                String code = option(w, "--pairing-code");
                if (code == null) {
                    throw new Usage("node add needs --pairing-code CODE (the node's pki/node/pairing-code)");
                }
                String id = option(w, "--id");
                String pool = option(w, "--pool");
                yield print(fleet.add(new Fleet.AddNode(arg(w, 1, "ADDRESS"), code, id, pool)));
            }
            case "ls" -> list();
            case "revoke" -> print(fleet.revoke(arg(w, 1, "ID")));
            case "token" -> {
                String pool = option(w, "--pool");
                Integer ttl = intOption(w, "--ttl");
                String id = option(w, "--id");
                Fleet.RegistrationToken t = fleet.issueToken(pool, ttl, id);
                out.println(json ? JSON.writeValueAsString(t) : t.token() + "  pool " + t.pool() + "  until "
                        + Instant.ofEpochSecond(t.expiresAtUnix()));
                yield 0;
            }
            default -> throw new Usage("unknown node command " + verb);
        };
    }

    private int list() throws IOException {
        List<Fleet.Node> nodes = fleet.list();
        if (json) {
            out.println(JSON.writeValueAsString(nodes));
            return 0;
        }
        out.printf("%-16s %-8s %-13s %-20s %-9s %s%n", "ID", "MODE", "STATE", "POOL", "SANDBOXES", "ADDRESS");
        nodes.forEach(n -> out.printf("%-16s %-8s %-13s %-20s %-9s %s%n", n.id(), n.mode(), n.state(), n.pool(),
                n.sandboxes() == null ? "-" : n.sandboxes() + "/" + n.maxSandboxes(), n.address() == null ? "-" : n.address()));
        return 0;
    }

    private int print(Fleet.Node n) throws IOException {
        out.println(json ? JSON.writeValueAsString(n) : n.id() + "  " + n.state() + "  " + n.pool());
        return 0;
    }
}
