package io.vivarium.launcher;

import static io.vivarium.launcher.CliWords.arg;
import static io.vivarium.launcher.CliWords.args;
import static io.vivarium.launcher.CliWords.intOption;
import static io.vivarium.launcher.CliWords.longOption;
import static io.vivarium.launcher.CliWords.option;
import static io.vivarium.launcher.CliWords.verb;

import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.function.Consumer;

import io.vivarium.api.CommandInfo;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.EvalRequest;
import io.vivarium.api.EvalResult;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ForkRequest;
import io.vivarium.api.NetworkPolicy;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SnapshotInfo;
import io.vivarium.api.IdlePolicy;
import io.vivarium.api.SnapshotRequest;
import io.vivarium.api.VolumeInfo;
import io.vivarium.api.VolumeMount;
import io.vivarium.client.CommandEvent;
import io.vivarium.client.Ports;
import io.vivarium.client.VivariumClient;
import io.vivarium.client.VivariumException;
import io.vivarium.launcher.CliWords.Usage;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;

/**
 * {@code vivarium sandbox|snapshot|vm|volume|template|node ...}: the sandbox API from a shell, on the Java client. Where
 * the daemon is and the token come from {@link DaemonTarget}. Output is a table or a line for a
 * person, {@code --json} the API's JSON for scripts; {@code sandbox exec} streams the command's
 * output as it is written and exits with its exit code. Errors go to stderr with the daemon's
 * message, exit 1; a usage error exits 2.
 */
final class SandboxCli {
    static final String USAGE = """
            usage: vivarium sandbox create [--template T] [--backend B] [--memory MIB] [--disk MIB] [NETWORK] [--volume V]...
                                          [--pause-after S] [--cold-after S]   (idle: paused, then saved to disk)
                   vivarium sandbox ls | info ID | rm ID... [--force] | touch ID...   (touch: resets the idle clock, resumes it)
                   vivarium sandbox exec ID [--timeout S --] CMD [ARG...]     (streams; exits with CMD's code)
                   vivarium sandbox shell ID [-- CMD [ARG...]]               (a terminal: a shell, or CMD; exits with its code)
                   vivarium sandbox start ID [--timeout S --] CMD [ARG...]    (in the background: prints its command id)
                   vivarium sandbox commands ID | logs ID CID [--from N] | kill ID CID [--signal N] | wait ID CID [--timeout S]
                   vivarium sandbox eval ID CODE | cp SRC DST (one of them ID:/path) | fork TAG [-n N] | branch ID TAG
                   vivarium sandbox port ID PORT [--expires S] [--close] | ports ID   (a server in the sandbox, through the daemon)
                   vivarium snapshot ls | info TAG | build TAG [--setup CMD]... [NETWORK] | rm TAG [--cascade] [--force]
                   vivarium vm create --backend B [--memory MIB] [--vcpus N] | ls | info ID | stop ID | start ID | rm ID... [--force]
                   vivarium volume create NAME --size MIB | ls | info NAME | rm NAME...
                   vivarium node add ADDRESS --pairing-code CODE [--id ID] [--pool P] | ls | revoke ID
                                 | token [--pool P] [--ttl S] [--id ID]   (a master's nodes; the operator token)
                   vivarium template create NAME --image REF [--backend B] [--user U] [--workdir DIR] [--env K=V]...
                                            [--memory MIB] [--client-may-set FIELD,...] [--setup 'SHELL COMMAND'] [--no-wait]
                                            | ls | info NAME | rm NAME...
              NETWORK: --network none|egress [--allow CIDR[:PORT]]... [--deny CIDR[:PORT]]... (--allow alone means egress)
              --volume NAME:/MOUNT/PATH[:ro] or NAME/SUB/PATH:/MOUNT/PATH[:ro] mounts a volume (docs/volumes.md)
              --json prints the API's JSON; the daemon and the token are found as for plugins and features
            """;

    static final ObjectMapper JSON = new ObjectMapper().setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .enable(SerializationFeature.INDENT_OUTPUT);

    private final VivariumClient vivarium;
    private final PrintStream out;
    private final PrintStream err;
    private final boolean json;
    private final Caller caller;

    private SandboxCli(VivariumClient vivarium, PrintStream out, PrintStream err, boolean json, Caller caller) {
        this.vivarium = vivarium;
        this.out = out;
        this.err = err;
        this.json = json;
        this.caller = caller;
    }

    static int run(String noun, List<String> args, Caller caller, PrintStream out, PrintStream err) {
        List<String> rest = new ArrayList<>(args);
        boolean json = rest.remove("--json");
        DaemonTarget target;
        VivariumClient client;
        try {
            target = DaemonTarget.resolve(rest, caller, noun.equals("node"));
            VivariumClient.Builder b = VivariumClient.builder(URI.create(target.url())).token(target.requireToken());
            if (target.cacert() != null) {
                b.sslContext(TlsFiles.trusting(TlsFiles.certificates("--cacert", target.cacert())));
            }
            client = b.build();
        } catch (DaemonTarget.Unresolved | TlsFiles.Refused e) {
            err.println("vivarium: " + e.getMessage());
            return 1;
        } catch (GeneralSecurityException e) {
            err.println("vivarium: --cacert: cannot trust its certificates (" + e.getMessage() + ")");
            return 1;
        }
        SandboxCli cli = new SandboxCli(client, out, err, json, caller);
        try {
            List<String> words = new ArrayList<>(target.words());
            return switch (noun) {
                case "sandbox" -> cli.sandbox(words);
                case "snapshot" -> cli.snapshot(words);
                case "volume" -> cli.volume(words);
                case "template" -> new TemplateCli(client, out, err, json, caller.terminal()).run(words);
                case "node" -> new NodeCli(client.fleet(), out, json).run(words);
                default -> cli.vm(words);
            };
        } catch (Usage e) {
            err.println("vivarium: " + e.getMessage());
            err.print(USAGE);
            return 2;
        } catch (VivariumException e) {
            err.println("vivarium: " + e.getMessage() + (e.status() == 0 ? " (its URL from " + target.from() + ")"
                    : " (HTTP " + e.status() + ")"));
            return 1;
        } catch (IOException e) {
            err.println("vivarium: " + e.getMessage());
            return 1;
        } finally {
            // its selector thread sits in epoll_wait, native code, for which the JVM's exit waits
            // 300 ms before it gives up: most of what a command waited after its work was done
            client.close();
        }
    }

    private int sandbox(List<String> w) throws Usage, IOException {
        String verb = verb(w);
        return switch (verb) {
            case "create" -> print(vivarium.sandboxes().create(new CreateSandboxRequest(option(w, "--backend"),
                    intOption(w, "--memory"), null, null, null, intOption(w, "--disk"), null, network(w), volumes(w), idle(w),
                    option(w, "--template"))));
            case "ls" -> list(vivarium.sandboxes().list());
            case "info" -> print(vivarium.sandboxes().get(arg(w, 1, "ID")));
            case "rm" -> {
                boolean force = w.remove("--force");
                for (String id : args(w, 1, "ID")) {
                    if (force) {
                        vivarium.sandboxes().deleteForcibly(id);
                    } else {
                        vivarium.sandboxes().delete(id);
                    }
                    say(id + " deleted");
                }
                yield 0;
            }
            case "touch" -> {
                for (String id : args(w, 1, "ID")) {
                    vivarium.sandboxes().touch(id);
                    say(id + " touched");
                }
                yield 0;
            }
            case "exec" -> exec(w);
            case "shell" -> {
                int dashes = w.indexOf("--");
                List<String> command = dashes < 0 ? List.of() : w.subList(dashes + 1, w.size());
                if (dashes < 0 && w.size() > 2 || dashes > 2) {
                    throw new Usage("shell takes one sandbox, then -- and the command: vivarium sandbox shell ID [-- CMD [ARG...]]");
                }
                if (!caller.isThisProcess()) {
                    throw new Usage("sandbox shell needs the terminal of a JVM of its own: run it with VIVARIUM_CLI_SERVER=off");
                }
                yield new ShellSession(vivarium, out, err).run(arg(w, 1, "ID"), command);
            }
            case "eval" -> {
                EvalResult r = vivarium.sandboxes().eval(arg(w, 1, "ID"), new EvalRequest(arg(w, 2, "CODE"), null));
                if (json) {
                    out.println(JSON.writeValueAsString(r));
                } else {
                    out.print(r.stdout() == null ? "" : r.stdout());
                    if (r.result() != null) {
                        out.println(r.result());
                    }
                    if (r.error() != null) {
                        err.println(r.error());
                    }
                }
                yield r.exitCode();
            }
            case "cp" -> copy(arg(w, 1, "SRC"), arg(w, 2, "DST"));
            case "fork" -> {
                Integer n = intOption(w, "-n");
                String tag = arg(w, 1, "TAG");
                ForkRequest fork = new ForkRequest(tag, n, null, null, null, null, null);
                if (json) {
                    yield list(vivarium.sandboxes().fork(fork));
                }
                err.println("forking " + (n == null ? 1 : n) + " of " + tag + " ...");
                try (ProgressBar bar = new ProgressBar(err, caller.terminal())) {
                    yield list(vivarium.sandboxes().fork(fork, bar));
                }
            }
            case "branch" -> print(vivarium.sandboxes().branch(arg(w, 1, "ID"), arg(w, 2, "TAG")));
            case "start" -> {
                Command c = command(w, "start");
                yield print(vivarium.commands().start(c.id(), c.request(), false));
            }
            case "commands" -> commands(vivarium.commands().list(arg(w, 1, "ID")));
            case "logs" -> {
                Long from = longOption(w, "--from");
                yield ended(vivarium.commands().events(arg(w, 1, "ID"), arg(w, 2, "CID"), from == null ? 0 : from, streamed()));
            }
            case "kill" -> {
                Integer signal = intOption(w, "--signal");
                yield print(vivarium.commands().signal(arg(w, 1, "ID"), arg(w, 2, "CID"), signal == null ? 15 : signal));
            }
            case "wait" -> waitFor(w);
            case "port" -> port(w);
            case "ports" -> ports(vivarium.ports().list(arg(w, 1, "ID")));
            default -> throw new Usage("unknown sandbox command '" + verb + "'");
        };
    }

    /** Streams the command's output to stdout and stderr as it is written; its exit code is this process's. */
    private int exec(List<String> w) throws Usage, IOException {
        Command c = command(w, "exec");
        return ended(vivarium.commands().execStream(c.id(), c.request(), streamed()));
    }

    /** A command line's sandbox and command: {@code VERB ID [--timeout S --] CMD [ARG...]}. */
    private record Command(String id, ExecRequest request) {
    }

    private static Command command(List<String> w, String verb) throws Usage {
        int dashes = w.indexOf("--");
        List<String> head = new ArrayList<>(dashes < 0 ? w.subList(0, Math.min(2, w.size())) : w.subList(0, dashes));
        List<String> command = dashes < 0 ? w.subList(Math.min(2, w.size()), w.size()) : w.subList(dashes + 1, w.size());
        Integer timeout = intOption(head, "--timeout"); // options only before --: the command's own are its
        String id = arg(head, 1, "ID");
        if (command.isEmpty()) {
            throw new Usage(verb + " needs a command: vivarium sandbox " + verb + " " + id + " -- CMD [ARG...]");
        }
        return new Command(id, new ExecRequest(command, timeout, null, null, null, null));
    }

    /** Writes a command's output events to stdout and stderr as they come (not with {@code --json}). */
    private Consumer<CommandEvent> streamed() {
        return e -> {
            if (!json && e.isOutput()) {
                PrintStream to = "stderr".equals(e.name()) ? err : out;
                to.write(e.data(), 0, e.data().length);
                to.flush();
            }
        };
    }

    /** Reports how a command ended; its exit code is this process's (1 when it has none: lost). */
    private int ended(CommandInfo ended) throws IOException {
        if (json) {
            out.println(JSON.writeValueAsString(ended));
        } else if (ended.timedOut()) {
            err.println("vivarium: the command timed out and was killed");
        } else if (ended.truncated()) {
            err.println("vivarium: output past max_output_bytes was discarded");
        } else if (ended.error() != null) {
            err.println("vivarium: the command was lost: " + ended.error());
        }
        return ended.exitCode() == null ? 1 : ended.exitCode();
    }

    /** Waits for a background command to end (each call to the daemon waits up to a minute); exits with its code. */
    private int waitFor(List<String> w) throws Usage, IOException {
        Integer timeout = intOption(w, "--timeout");
        String id = arg(w, 1, "ID");
        String cid = arg(w, 2, "CID");
        long deadline = timeout == null ? Long.MAX_VALUE : System.nanoTime() + Duration.ofSeconds(timeout).toNanos();
        CommandInfo c = vivarium.commands().get(id, cid);
        while (!c.ended() && System.nanoTime() < deadline) {
            long left = Math.max(1, (deadline - System.nanoTime()) / 1_000_000_000L);
            c = vivarium.commands().await(id, cid, Duration.ofSeconds(Math.min(60, left)));
        }
        if (!c.ended()) {
            err.println("vivarium: " + cid + " still runs after " + timeout + " s");
            if (json) {
                out.println(JSON.writeValueAsString(c));
            }
            return 124;
        }
        return ended(c);
    }

    private int commands(List<CommandInfo> commands) throws IOException {
        if (json) {
            out.println(JSON.writeValueAsString(commands));
            return 0;
        }
        out.printf("%-16s %-8s %-5s %-20s %s%n", "COMMAND", "STATUS", "EXIT", "STARTED", "ARGS");
        commands.forEach(c -> out.printf("%-16s %-8s %-5s %-20s %s%n", c.id(), c.status(),
                c.exitCode() == null ? "-" : c.exitCode(), Instant.ofEpochSecond(c.startedAtUnix()), String.join(" ", c.args())));
        return 0;
    }

    private int copy(String src, String dst) throws Usage, IOException {
        String[] from = inSandbox(src);
        String[] to = inSandbox(dst);
        if ((from == null) == (to == null)) {
            throw new Usage("cp copies between this machine and a sandbox: one of SRC and DST is ID:/path");
        }
        if (from != null) {
            byte[] content = vivarium.sandboxes().readFile(from[0], from[1]);
            Path local = caller.path(dst);
            boolean made = !Files.exists(local);
            Files.write(local, content);
            if (made) {
                caller.madeFile(local);
            }
            say(content.length + " bytes from " + src + " to " + dst);
        } else {
            byte[] content = Files.readAllBytes(caller.path(src));
            vivarium.sandboxes().writeFile(to[0], to[1], content);
            say(content.length + " bytes from " + src + " to " + dst);
        }
        return 0;
    }

    /** {@code ID:/path} as {id, path}; null for a local path. */
    private static String[] inSandbox(String s) {
        int colon = s.indexOf(':');
        return colon > 0 && s.startsWith("/", colon + 1) && !s.startsWith("/") ? new String[] {s.substring(0, colon), s.substring(colon + 1)}
                : null;
    }

    private int snapshot(List<String> w) throws Usage, IOException {
        String verb = verb(w);
        return switch (verb) {
            case "ls" -> {
                List<SnapshotInfo> all = vivarium.snapshots().list();
                if (json) {
                    out.println(JSON.writeValueAsString(all));
                } else {
                    out.printf("%-24s %-10s %-8s %-20s%n", "TAG", "BACKEND", "STATUS", "CREATED");
                    all.forEach(s -> out.printf("%-24s %-10s %-8s %-20s%n", s.tag(), s.backend(), s.status(),
                            Instant.ofEpochSecond(s.createdAtUnix())));
                }
                yield 0;
            }
            case "info" -> print(vivarium.snapshots().info(arg(w, 1, "TAG")));
            case "build" -> {
                List<String> setup = new ArrayList<>();
                for (String s; (s = option(w, "--setup")) != null;) {
                    setup.add(s);
                }
                String tag = arg(w, 1, "TAG");
                SnapshotRequest build = new SnapshotRequest(tag, option(w, "--backend"), null,
                        setup.isEmpty() ? null : setup, null, null, network(w));
                if (json) {
                    yield print(vivarium.snapshots().build(build));
                }
                err.println("building " + tag + " (boots a sandbox, runs the setup, captures it) ...");
                try (ProgressBar bar = new ProgressBar(err, caller.terminal())) {
                    yield print(vivarium.snapshots().build(build, bar));
                }
            }
            case "rm" -> {
                boolean cascade = w.remove("--cascade");
                boolean force = w.remove("--force");
                vivarium.snapshots().delete(arg(w, 1, "TAG"), cascade, force);
                say(w.get(1) + " deleted");
                yield 0;
            }
            default -> throw new Usage("unknown snapshot command '" + verb + "'");
        };
    }

    private int vm(List<String> w) throws Usage, IOException {
        String verb = verb(w);
        return switch (verb) {
            case "create" -> print(vivarium.vms().create(new CreateSandboxRequest(option(w, "--backend"), intOption(w, "--memory"),
                    intOption(w, "--vcpus"), null, null, null, null)));
            case "ls" -> list(vivarium.vms().list());
            case "info" -> print(vivarium.vms().get(arg(w, 1, "ID")));
            case "stop" -> print(vivarium.vms().stop(arg(w, 1, "ID")));
            case "start" -> print(vivarium.vms().start(arg(w, 1, "ID")));
            case "rm" -> {
                boolean force = w.remove("--force");
                for (String id : args(w, 1, "ID")) {
                    if (force) {
                        vivarium.vms().deleteForcibly(id);
                    } else {
                        vivarium.vms().delete(id);
                    }
                    say(id + " deleted");
                }
                yield 0;
            }
            default -> throw new Usage("unknown vm command '" + verb + "'");
        };
    }

    /** Exposes a port (or, with {@code --close}, closes it) and prints where it is reached. */
    private int port(List<String> w) throws Usage, IOException {
        boolean close = w.remove("--close");
        Integer expires = intOption(w, "--expires");
        String id = arg(w, 1, "ID");
        int port;
        try {
            port = Integer.parseInt(arg(w, 2, "PORT"));
        } catch (NumberFormatException e) {
            throw new Usage("PORT must be a number, got " + w.get(2));
        }
        if (close) {
            vivarium.ports().close(id, port);
            say("port " + port + " of " + id + " closed");
            return 0;
        }
        return ports(List.of(vivarium.ports().expose(id, port, expires == null ? null : Duration.ofSeconds(expires))));
    }

    private int ports(List<Ports.PortUrls> ports) throws IOException {
        if (json) { // the API's shape: absolute URLs, the expiry as ISO 8601
            out.println(JSON.writeValueAsString(ports.stream().map(p -> new PortLine(p.port(), p.url().toString(),
                    p.signedUrl().toString(), p.expiresAt().toString())).toList()));
            return 0;
        }
        out.printf("%-6s %-20s %s%n", "PORT", "SIGNED URL EXPIRES", "URL (bearer token) / SIGNED URL (none needed)");
        ports.forEach(p -> out.printf("%-6d %-20s %s%n%27s  %s%n", p.port(), p.expiresAt(), p.url(), "", p.signedUrl()));
        return 0;
    }

    /** A port as {@code --json} prints it: the API's fields, the URLs absolute. */
    private record PortLine(int port, String url, String signedUrl, String expiresAt) {
    }

    private int volume(List<String> w) throws Usage, IOException {
        String verb = verb(w);
        return switch (verb) {
            case "create" -> {
                Integer size = intOption(w, "--size");
                if (size == null) {
                    throw new Usage("volume create needs --size MIB");
                }
                yield print(vivarium.volumes().create(arg(w, 1, "NAME"), size));
            }
            case "ls" -> {
                List<VolumeInfo> volumes = vivarium.volumes().list();
                if (json) {
                    out.println(JSON.writeValueAsString(volumes));
                    yield 0;
                }
                out.printf("%-24s %10s %-20s %s%n", "NAME", "SIZE_MIB", "CREATED", "MOUNTED IN");
                volumes.forEach(v -> out.printf("%-24s %10d %-20s %s%n", v.name(), v.sizeMib(),
                        Instant.ofEpochSecond(v.createdAtUnix()), v.attachments().stream()
                                .map(a -> a.sandboxId() + (a.readOnly() ? " (ro)" : "")).collect(Collectors.joining(", "))));
                yield 0;
            }
            case "info" -> print(vivarium.volumes().get(arg(w, 1, "NAME")));
            case "rm" -> {
                for (String name : args(w, 1, "NAME")) {
                    vivarium.volumes().delete(name);
                    say(name + " deleted");
                }
                yield 0;
            }
            default -> throw new Usage("unknown volume command " + verb);
        };
    }

    /**
     * {@code --pause-after S} and {@code --cold-after S}: paused after S idle seconds, saved to disk
     * after S (docs/tiers.md); null for the operator's defaults.
     */
    private static IdlePolicy idle(List<String> w) throws Usage {
        Integer pauseAfter = intOption(w, "--pause-after");
        Integer coldAfter = intOption(w, "--cold-after");
        return pauseAfter == null && coldAfter == null ? null : new IdlePolicy(pauseAfter, coldAfter);
    }

    /** The {@code --volume} options: {@code NAME[/SUB/PATH]:/MOUNT/PATH[:ro]} each; the daemon checks the rest. */
    private static List<VolumeMount> volumes(List<String> w) throws Usage {
        List<VolumeMount> mounts = new ArrayList<>();
        for (String v; (v = option(w, "--volume")) != null;) {
            String[] parts = v.split(":", -1);
            if (parts.length < 2 || parts.length > 3 || parts.length == 3 && !parts[2].equals("ro")) {
                throw new Usage("--volume is NAME:/MOUNT/PATH[:ro] or NAME/SUB/PATH:/MOUNT/PATH[:ro], got " + v);
            }
            int slash = parts[0].indexOf('/');
            String name = slash < 0 ? parts[0] : parts[0].substring(0, slash);
            String subPath = slash < 0 ? null : parts[0].substring(slash + 1);
            mounts.add(new VolumeMount(name, parts[1], subPath, parts.length == 3));
        }
        return mounts;
    }

    /** The network options ({@code --network}, {@code --allow}, {@code --deny}), or null for the operator's default. */
    private static NetworkPolicy network(List<String> w) throws Usage {
        String mode = option(w, "--network");
        List<String> allow = new ArrayList<>();
        for (String a; (a = option(w, "--allow")) != null;) {
            allow.add(a);
        }
        List<String> deny = new ArrayList<>();
        for (String d; (d = option(w, "--deny")) != null;) {
            deny.add(d);
        }
        if (mode == null && allow.isEmpty() && deny.isEmpty()) {
            return null;
        }
        return new NetworkPolicy(mode == null ? NetworkPolicy.EGRESS : mode, allow, deny);
    }

    private int list(List<SandboxInfo> sandboxes) throws IOException {
        if (json) {
            out.println(JSON.writeValueAsString(sandboxes));
            return 0;
        }
        out.printf("%-16s %-10s %-18s %-20s%n", "ID", "BACKEND", "STATUS", "CREATED");
        sandboxes.forEach(s -> out.printf("%-16s %-10s %-18s %-20s%n", s.id(), s.backend(), s.status(),
                Instant.ofEpochSecond(s.createdAtUnix())));
        return 0;
    }

    /** A record as JSON with {@code --json}; else its id (or tag) first, which is what a person pipes on. */
    private int print(Object record) throws IOException {
        if (json) {
            out.println(JSON.writeValueAsString(record));
        } else if (record instanceof SandboxInfo s) {
            out.println(s.id() + "  " + s.backend() + "  " + s.status());
        } else if (record instanceof SnapshotInfo s) {
            out.println(s.tag() + "  " + s.backend() + "  " + s.status());
        } else if (record instanceof CommandInfo c) {
            out.println(c.id() + "  " + c.status() + (c.exitCode() == null ? "" : "  exit " + c.exitCode()));
        } else {
            out.println(JSON.writeValueAsString(record));
        }
        return 0;
    }

    private void say(String line) {
        if (!json) {
            out.println(line);
        }
    }
}
