package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.vivarium.itests.e2e.CommandLine.Run;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The distribution's {@code bin/vivarium sandbox|snapshot ...} as a shell runs it, against a real
 * daemon found through the address it wrote in its state directory: output, {@code --json},
 * exit codes passed through, errors that name what was tried.
 */
class SandboxCliIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    static Path dir;
    static Daemon daemon;

    @BeforeAll
    static void start() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        daemon = daemons.start(dir.resolve("state"), List.of());
    }

    private static Run cli(Map<String, String> env, String... args) throws Exception {
        return CommandLine.run(dir, env, args);
    }

    /** The command line run by {@code sh -c script} (for pipes and {@code script}), with {@code input} on its stdin. */
    private static Run shell(String script, String input) throws Exception {
        ProcessBuilder pb = new ProcessBuilder("sh", "-c", script).directory(dir.toFile());
        CommandLine.environment(pb.environment());
        pb.environment().put("VIVARIUM", Path.of(System.getProperty("vivarium.dist"), "bin", "vivarium").toString());
        pb.environment().putAll(atTheDaemon());
        Process p = pb.start();
        p.getOutputStream().write(input.getBytes(StandardCharsets.UTF_8));
        p.getOutputStream().close();
        byte[] out = p.getInputStream().readAllBytes();
        byte[] err = p.getErrorStream().readAllBytes();
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the command line ended");
        return new Run(p.exitValue(), new String(out, StandardCharsets.UTF_8), new String(err, StandardCharsets.UTF_8));
    }

    @Test
    void aShellTakesPipedKeysOrFollowsARealTerminal() throws Exception {
        String id = Api.JSON.readTree(cli(atTheDaemon(), "sandbox", "create", "--json").out()).get("id").asText();
        Run piped = shell("\"$VIVARIUM\" sandbox shell " + id, "echo $((6*7))\nexit 5\n");
        assertEquals(5, piped.code(), piped.err());
        assertTrue(piped.out().contains("42"), "what the shell printed: " + piped.out());
        Run command = shell("\"$VIVARIUM\" sandbox shell " + id + " -- sh -c 'read x; echo got:$x'", "line\n");
        assertEquals(0, command.code(), command.err());
        assertTrue(command.out().contains("got:line"), command.out());

        // script(1) gives the command line a real terminal of 33x77: raw mode, and the sandbox's terminal takes its size
        Run tty = shell("script -qec 'stty rows 33 cols 77; \"$VIVARIUM\" sandbox shell " + id + "' /dev/null",
                "stty size\nexit 9\n");
        assertEquals(9, tty.code(), tty.out() + tty.err());
        assertTrue(tty.out().contains("33 77"), "the sandbox's terminal has the size of the one the command line runs in: " + tty.out());
        assertEquals(0, cli(atTheDaemon(), "sandbox", "rm", id).code());
    }

    private static Map<String, String> atTheDaemon() {
        return Map.of("VIVARIUM_STATE", daemon.stateDir().toString());
    }

    @Test
    void aSandboxIsDrivenFromAShellWithTheCommandsExitCode() throws Exception {
        assertTrue(Files.exists(daemon.stateDir().resolve("address")), "the daemon wrote where it listens");
        Run created = cli(atTheDaemon(), "sandbox", "create", "--json");
        assertEquals(0, created.code(), created.err());
        String id = Api.JSON.readTree(created.out()).get("id").asText();
        assertTrue(cli(atTheDaemon(), "sandbox", "ls").out().contains(id));

        Run exec = cli(atTheDaemon(), "sandbox", "exec", id, "--", "sh", "-c", "echo out; echo err >&2; exit 7");
        assertEquals(7, exec.code(), "the command's exit code is the command line's");
        assertEquals("out\n", exec.out());
        assertEquals("err\n", exec.err());

        Path local = Files.writeString(dir.resolve("up.txt"), "from the shell");
        assertEquals(0, cli(atTheDaemon(), "sandbox", "cp", local.toString(), id + ":/work/up.txt").code());
        assertEquals(0, cli(atTheDaemon(), "sandbox", "cp", id + ":/work/up.txt", dir.resolve("down.txt").toString()).code());
        assertEquals("from the shell", Files.readString(dir.resolve("down.txt")));

        JsonNode done = Api.JSON.readTree(cli(atTheDaemon(), "sandbox", "exec", id, "--json", "--", "true").out());
        assertEquals(0, done.get("exit_code").asInt());

        assertEquals(0, cli(atTheDaemon(), "sandbox", "branch", id, "cli-tag").code());
        assertTrue(cli(atTheDaemon(), "snapshot", "ls").out().contains("cli-tag"));
        Run shown = cli(atTheDaemon(), "sandbox", "fork", "cli-tag", "-n", "2");
        assertEquals(0, shown.code(), shown.err());
        assertTrue(shown.err().contains("] 2/2 children\n"), "a progress bar, a line per step off a terminal: " + shown.err());
        for (String line : shown.out().split("\n")) {
            if (line.startsWith("sb-")) {
                assertEquals(0, cli(atTheDaemon(), "sandbox", "rm", line.split("\\s+")[0]).code());
            }
        }
        Run forked = cli(atTheDaemon(), "sandbox", "fork", "cli-tag", "-n", "2", "--json");
        assertEquals(2, Api.JSON.readTree(forked.out()).size(), forked.err());
        for (JsonNode child : Api.JSON.readTree(forked.out())) {
            assertEquals(0, cli(atTheDaemon(), "sandbox", "rm", child.get("id").asText()).code());
        }
        assertEquals(0, cli(atTheDaemon(), "snapshot", "rm", "cli-tag").code());
        assertEquals(0, cli(atTheDaemon(), "sandbox", "rm", id).code());
    }

    @Test
    void theCommandLineServerRunsEachCommandAsItsCallerWouldAndOutlivesACallerThatGoes() throws Exception {
        // relative paths are the caller's: the server itself runs in /
        Map<String, String> relative = Map.of("VIVARIUM_STATE", dir.relativize(daemon.stateDir()).toString());
        String id = Api.JSON.readTree(cli(relative, "sandbox", "create", "--json").out()).get("id").asText();
        Files.writeString(dir.resolve("rel.txt"), "relative");
        Run copied = cli(relative, "sandbox", "cp", "rel.txt", id + ":/work/rel.txt");
        assertEquals(0, copied.code(), copied.err());
        try (var sockets = Files.list(CommandLine.servers())) {
            assertEquals(1, sockets.filter(f -> f.toString().endsWith(".sock")).count(), "one server, in the test's runtime folder");
        }

        String[] exec = {"sandbox", "exec", id, "--", "sh", "-c", "cat /work/rel.txt; echo err >&2; exit 7"};
        Run served = cli(relative, exec);
        Run direct = cli(Map.of("VIVARIUM_STATE", daemon.stateDir().toString(), "VIVARIUM_CLI_SERVER", "off"), exec);
        assertEquals(List.of(7, "relative", "err\n"), List.of(served.code(), served.out(), served.err()));
        assertEquals(List.of(7, "relative", "err\n"), List.of(direct.code(), direct.out(), direct.err()), "a JVM of its own says the same");

        // files it makes get the caller's umask; a reader that goes (| head) leaves the command's code to the caller, as a JVM would
        Run masked = shell("umask 077; \"$VIVARIUM\" sandbox cp " + id + ":/work/rel.txt private.txt", "");
        assertEquals(0, masked.code(), masked.err());
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve("private.txt"))));
        Run headed = shell("{ \"$VIVARIUM\" sandbox exec " + id + " -- sh -c 'seq 1 50000; exit 4'; echo \"code $?\" >&2; } | head -1", "");
        assertEquals(List.of("1\n", "code 4\n"), List.of(headed.out(), headed.err()));

        // a caller that goes mid-stream (Ctrl-C, a closed terminal): the server goes on serving
        List<String> longExec = List.of(Path.of(System.getProperty("vivarium.dist"), "bin", "vivarium").toString(), "sandbox", "exec", id,
                "--", "sh", "-c", "echo started; sleep 60");
        ProcessBuilder pb = new ProcessBuilder(longExec).directory(dir.toFile());
        CommandLine.environment(pb.environment());
        pb.environment().putAll(atTheDaemon());
        Process gone = pb.start();
        assertEquals("started", new java.io.BufferedReader(new java.io.InputStreamReader(gone.getInputStream())).readLine());
        gone.destroy();
        assertTrue(gone.waitFor(10, TimeUnit.SECONDS));
        Run after = cli(atTheDaemon(), "sandbox", "exec", id, "--", "echo", "after");
        assertEquals(List.of(0, "after\n"), List.of(after.code(), after.out()), after.err());
        assertEquals(0, cli(atTheDaemon(), "sandbox", "rm", id).code());
    }

    @Test
    void aBackgroundCommandIsStartedListedFollowedWaitedForAndKilled() throws Exception {
        String id = Api.JSON.readTree(cli(atTheDaemon(), "sandbox", "create", "--json").out()).get("id").asText();
        Run started = cli(atTheDaemon(), "sandbox", "start", id, "--", "sh", "-c", "echo one; echo two >&2; sleep 1; exit 5");
        assertEquals(0, started.code(), started.err());
        String cid = started.out().strip().split("\\s+")[0];
        assertTrue(cid.matches("cmd-[0-9a-f]{12}"), started.out());
        assertTrue(cli(atTheDaemon(), "sandbox", "commands", id).out().contains(cid));

        Run logs = cli(atTheDaemon(), "sandbox", "logs", id, cid);
        assertEquals(5, logs.code(), "logs follows the command to its end and exits with its code");
        assertEquals("one\n", logs.out());
        assertEquals("two\n", logs.err());
        Run rest = cli(atTheDaemon(), "sandbox", "logs", id, cid, "--from", "1");
        assertEquals(7, rest.out().length() + rest.err().length(), "from a byte offset of its one log of both streams: "
                + rest.out() + "|" + rest.err());
        assertEquals(5, cli(atTheDaemon(), "sandbox", "wait", id, cid).code());

        String sleeper = cli(atTheDaemon(), "sandbox", "start", id, "--", "sleep", "600").out().strip().split("\\s+")[0];
        assertEquals(124, cli(atTheDaemon(), "sandbox", "wait", id, sleeper, "--timeout", "1").code(), "still running");
        Run killed = cli(atTheDaemon(), "sandbox", "kill", id, sleeper, "--signal", "9", "--json");
        assertEquals(0, killed.code(), killed.err());
        assertEquals(128 + 9, cli(atTheDaemon(), "sandbox", "wait", id, sleeper, "--timeout", "30").code());
        assertEquals(0, cli(atTheDaemon(), "sandbox", "rm", id).code());
    }

    @Test
    void aSandboxWithANetworkExposesAPortFromTheShell() throws Exception {
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/sbin/nft")), "needs nftables' nft for a sandbox network");
        Run created = cli(atTheDaemon(), "sandbox", "create", "--network", "egress", "--json");
        assertEquals(0, created.code(), created.err());
        JsonNode sandbox = Api.JSON.readTree(created.out());
        assertEquals("egress", sandbox.get("network").get("mode").asText());
        String id = sandbox.get("id").asText();
        Run refused = cli(atTheDaemon(), "sandbox", "create", "--allow", "198.51.100.0/24");
        assertEquals(1, refused.code());
        assertTrue(refused.err().contains("network_allow") && refused.err().contains("HTTP 403"), refused.err());

        Run exposed = cli(atTheDaemon(), "sandbox", "port", id, "8000", "--expires", "60", "--json");
        assertEquals(0, exposed.code(), exposed.err());
        JsonNode port = Api.JSON.readTree(exposed.out()).get(0);
        assertEquals(daemon.baseUrl() + "/v1/sandboxes/" + id + "/ports/8000/", port.get("url").asText());
        assertTrue(port.get("signed_url").asText().contains("vivarium_token="), port.toString());
        assertTrue(cli(atTheDaemon(), "sandbox", "ports", id).out().contains(port.get("url").asText()));
        assertEquals(0, cli(atTheDaemon(), "sandbox", "port", id, "8000", "--close").code());
        assertEquals("[ ]", cli(atTheDaemon(), "sandbox", "ports", id, "--json").out().strip());
        assertEquals(0, cli(atTheDaemon(), "sandbox", "rm", id).code());
    }

    @Test
    void aVolumeIsMadeMountedListedAndDeletedFromTheShell() throws Exception {
        Run made = cli(atTheDaemon(), "volume", "create", "cli-data", "--size", "16");
        assertEquals(0, made.code(), made.err());
        Run created = cli(atTheDaemon(), "sandbox", "create", "--volume", "cli-data/sub:/data", "--json");
        assertEquals(0, created.code(), created.err());
        JsonNode sandbox = Api.JSON.readTree(created.out());
        assertEquals("sub", sandbox.get("volumes").get(0).get("sub_path").asText(), sandbox.toString());
        String id = sandbox.get("id").asText();
        assertEquals(0, cli(atTheDaemon(), "sandbox", "exec", id, "sh", "-c", "echo hi > /data/f").code());
        Run listed = cli(atTheDaemon(), "volume", "ls");
        assertTrue(listed.out().contains("cli-data") && listed.out().contains(id), listed.out());
        Run busy = cli(atTheDaemon(), "volume", "rm", "cli-data");
        assertEquals(1, busy.code());
        assertTrue(busy.err().contains(id) && busy.err().contains("HTTP 409"), busy.err());
        assertEquals(0, cli(atTheDaemon(), "sandbox", "rm", id).code());
        Run reader = cli(atTheDaemon(), "sandbox", "create", "--volume", "cli-data:/data:ro", "--json");
        String readerId = Api.JSON.readTree(reader.out()).get("id").asText();
        Run read = cli(atTheDaemon(), "sandbox", "exec", readerId, "cat", "/data/sub/f");
        assertEquals("hi\n", read.out(), read.err());
        assertEquals(0, cli(atTheDaemon(), "sandbox", "rm", readerId).code());
        assertEquals(2, cli(atTheDaemon(), "sandbox", "create", "--volume", "cli-data:/data:rw").code(), "only :ro may follow");
        assertEquals(2, cli(atTheDaemon(), "volume", "create", "no-size").code());
        assertEquals(0, cli(atTheDaemon(), "volume", "rm", "cli-data").code());
        assertEquals("[ ]", cli(atTheDaemon(), "volume", "ls", "--json").out().strip());
    }

    @Test
    void anIdlePolicyIsSetAndASandboxTouchedFromTheShell() throws Exception {
        Run created = cli(atTheDaemon(), "sandbox", "create", "--pause-after", "600", "--json");
        assertEquals(0, created.code(), created.err());
        JsonNode sandbox = Api.JSON.readTree(created.out());
        assertEquals(600, sandbox.get("idle").get("pause_after_secs").asInt(), sandbox.toString());
        String id = sandbox.get("id").asText();
        Api.expect(200, new Api(daemon.baseUrl(), daemon.adminToken()).post("/v1/sandboxes/" + id + "/pause", null));
        Run touched = cli(atTheDaemon(), "sandbox", "touch", id);
        assertEquals(0, touched.code(), touched.err());
        assertEquals(id + " touched\n", touched.out());
        Run cold = cli(atTheDaemon(), "sandbox", "create", "--pause-after", "60", "--cold-after", "600");
        assertEquals(1, cold.code(), "procbox cannot go cold: the daemon's 400 is the CLI's error");
        assertTrue(cold.err().contains("hibernate"), cold.err());
        assertEquals("hot", Api.JSON.readTree(cli(atTheDaemon(), "sandbox", "info", id, "--json").out()).get("tier").asText(),
                "touch resumed it");
        assertEquals(0, cli(atTheDaemon(), "sandbox", "rm", id).code());
    }

    @Test
    void errorsSayWhatIsWrongAndWhatWasTried() throws Exception {
        Run missing = cli(atTheDaemon(), "sandbox", "info", "sb-000000000000");
        assertEquals(1, missing.code());
        assertEquals("vivarium: no sandbox sb-000000000000 (HTTP 404)\n", missing.err());
        Run nowhere = cli(Map.of(), "sandbox", "ls");
        assertEquals(1, nowhere.code());
        assertTrue(nowhere.err().contains("tried --url (not given), $VIVARIUM_URL (not set)"), nowhere.err());
        Run away = cli(Map.of("VIVARIUM_URL", "http://127.0.0.1:1", "VIVARIUM_TOKEN", "t"), "sandbox", "ls");
        assertEquals(1, away.code());
        assertTrue(away.err().startsWith("vivarium: the daemon at http://127.0.0.1:1 did not answer GET /v1/sandboxes")
                && away.err().endsWith(" (its URL from $VIVARIUM_URL)\n"), "the daemon named once, and where its URL came from: " + away.err());
        Run usage = cli(atTheDaemon(), "sandbox", "frob");
        assertEquals(2, usage.code());
        assertTrue(usage.err().contains("usage: vivarium sandbox"), usage.err());
    }
}
