package io.vivarium.guestagent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** vivarium-list: the agent's own walk, its arguments and what its user cannot read. */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class AgentListTest {
    @TempDir
    Path dir;
    AgentProcess agent;

    @AfterEach
    void stop() throws Exception {
        if (agent != null) {
            agent.close();
        }
    }

    @Test
    void anUnknownModeOrARelativeOrNoPathIsRefusedBeforeAnythingRuns() throws Exception {
        agent = AgentProcess.start(dir);
        try (AgentConnection conn = agent.connect()) {
            conn.error("vivarium-list", Map.of("mode", "md5", "paths", List.of("/")), "InvalidParameter");
            conn.error("vivarium-list", Map.of("mode", "stat", "paths", List.of("relative")), "InvalidParameter");
            conn.error("vivarium-list", Map.of("mode", "stat", "paths", List.of()), "InvalidParameter");
            conn.error("vivarium-list", Map.of("mode", "stat"), "InvalidParameter");
            conn.error("vivarium-list", Map.of("mode", "stat", "paths", List.of("/"), "argv", List.of("sh")),
                    "InvalidParameter");
        }
    }

    @Test
    void aFileTheAgentsUserCannotReadIsUnreadableAndAnUnreadableDirectoryFailsTheWalk() throws Exception {
        assumeTrue(AgentExecTest.isRoot(), "needs root: the agent drops to 65534 with --user");
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        Path tree = Files.createDirectories(dir.resolve("tree"));
        Files.setPosixFilePermissions(tree, PosixFilePermissions.fromString("rwxr-xr-x"));
        Path open = Files.writeString(tree.resolve("open"), "x");
        Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rw-r--r--"));
        Path secret = Files.writeString(tree.resolve("secret"), "x");
        Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("rw-------"));
        agent = AgentProcess.start(dir, "--user", AgentUserTest.USER);
        try (AgentConnection conn = agent.connect()) {
            JsonNode r = conn.ok("vivarium-list", Map.of("mode", "stat", "paths", List.of(tree.toString()), "wait-ms", 10000));
            assertEquals(0, r.get("exit-code").asInt(), AgentExecTest.text(r, "err-b64"));
            long mtime = Files.getLastModifiedTime(open).toInstant().getEpochSecond();
            assertEquals(Set.of("1:" + mtime + "\t" + open, "unreadable\t" + secret),
                    Set.of(AgentExecTest.text(r, "out-b64").split("\0")));

            Path closed = Files.createDirectories(tree.resolve("closed"));
            Files.setPosixFilePermissions(closed, PosixFilePermissions.fromString("rwx------"));
            r = conn.ok("vivarium-list", Map.of("mode", "sha256", "paths", List.of(tree.toString()), "wait-ms", 10000));
            assertEquals(1, r.get("exit-code").asInt());
            assertTrue(AgentExecTest.text(r, "err-b64").contains(closed.toString()), AgentExecTest.text(r, "err-b64"));
            assertTrue(AgentExecTest.text(r, "out-b64").contains("unreadable\t" + secret + "\0"));
        }
    }
}
