package io.vivarium.backend.gvisor.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.api.ApiException;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.SandboxInstance;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What runsc does for this backend beyond the kit's contract: limits, isolation, files, clean removal. */
class GvisorContainerTest {

    @TempDir
    Path tmp;

    private Revision revision;
    private final CreatedContainers created = new CreatedContainers();

    @BeforeEach
    void start() {
        GvisorHost.assumeRunsc();
        revision = GvisorHost.revision(tmp);
    }

    @AfterEach
    void destroyAll() {
        created.destroyAll(revision);
    }

    private SandboxInstance create(String id, Integer memoryMib) {
        InstanceSpec spec = new InstanceSpec(id, tmp.resolve(id), memoryMib, null, null, null, null);
        return created.create(revision, spec);
    }

    private static ExecResult sh(SandboxInstance i, String script) {
        return i.channel().exec(new ExecRequest(List.of("/bin/sh", "-c", script), 20,
                Map.of("PATH", "/usr/bin:/bin"), "/work", null, 1 << 16));
    }

    @Test
    void theMemoryLimitIsTheSandboxCgroupsLimit() throws IOException {
        GvisorInstance i = (GvisorInstance) create("mem", 200);
        String memoryCgroup = Files.readAllLines(Path.of("/proc", Long.toString(i.record().sandboxPid()), "cgroup"))
                .stream().filter(l -> l.split(":")[1].equals("memory") || l.startsWith("0::")).findFirst().orElseThrow()
                .split(":", 3)[2];
        Path v1 = Path.of("/sys/fs/cgroup/memory", memoryCgroup, "memory.limit_in_bytes");
        Path v2 = Path.of("/sys/fs/cgroup", memoryCgroup, "memory.max");
        String limit = Files.readString(Files.exists(v1) ? v1 : v2).strip();
        assertEquals(Long.toString(200L << 20), limit, "the sandbox's memory cgroup");
    }

    @Test
    void pidsAndDiskLimitsAreRefusedWithTheReason() {
        ApiException pids = assertThrows(ApiException.class, () -> revision.create(
                new InstanceSpec("pids", tmp.resolve("pids"), null, null, null, 32, null)));
        assertEquals(501, pids.status());
        assertTrue(pids.getMessage().contains("pids_limit"), pids.getMessage());
        ApiException disk = assertThrows(ApiException.class, () -> revision.create(
                new InstanceSpec("disk", tmp.resolve("disk"), null, null, null, null, 64)));
        assertEquals(501, disk.status());
        assertFalse(Files.exists(tmp.resolve("pids").resolve("runsc")), "nothing was made for a refused create");
    }

    @Test
    void theRootIsReadOnlyTheWorkspaceWritableAndThereIsNoNetwork() throws IOException {
        SandboxInstance i = create("iso", null);
        assertNotEquals(0, sh(i, "touch /usr/x").exitCode(), "the root filesystem is read-only");
        ExecResult w = sh(i, "echo hi > made.txt && id -u");
        assertEquals(0, w.exitCode(), w.stderr());
        assertEquals("65534\n", w.stdout(), "commands run as the sandbox user");
        Path onHost = ((GvisorInstance) i).record().files().workspace().resolve("made.txt");
        assertEquals("hi\n", Files.readString(onHost));
        assertEquals(65534, Files.getAttribute(onHost, "unix:uid"), "the host file is the sandbox user's");
        assertEquals(i.hostFiles().orElseThrow().hostDir(), onHost.getParent());
        ExecResult net = sh(i, "cat /proc/net/dev");
        assertFalse(net.stdout().contains("eth"), "no interface but loopback: " + net.stdout());
    }

    @Test
    void filesGoThroughTheAgent() {
        SandboxInstance i = create("files", null);
        i.channel().writeFile("/work/a.txt", "payload".getBytes(StandardCharsets.UTF_8));
        assertEquals("payload", new String(i.channel().readFile("/work/a.txt", 1 << 10), StandardCharsets.UTF_8));
    }

    @Test
    void aMemoryLimitTooSmallToStartIsA400ThatLeavesNoCgroupAndNoFiles() {
        // a 1 MiB limit: runsc makes the cgroup, then its gofer cannot start in it
        ApiException e = assertThrows(ApiException.class, () -> revision.create(
                new InstanceSpec("tiny", tmp.resolve("tiny"), 1, null, null, null, null)));
        assertEquals(400, e.status(), e.getMessage());
        assertTrue(e.getMessage().startsWith("memory_limit_mib 1 is too small"), e.getMessage());
        try (var cgroups = Files.list(Path.of("/sys/fs/cgroup/memory"))) {
            assertTrue(cgroups.noneMatch(c -> c.getFileName().toString().startsWith("vivarium-tiny-")),
                    "no cgroup of the failed container is left");
        } catch (IOException notV1) {
            // cgroup v2: runsc's own cleanup is what there is to trust
        }
        assertFalse(Files.exists(tmp.resolve("tiny").resolve("runsc")), "its files are removed");
    }

    @Test
    void destroyRemovesTheContainerItsStateAndItsCgroupAlsoWhenItDied() throws Exception {
        GvisorInstance i = (GvisorInstance) create("gone", 128);
        ContainerRecord record = i.record();
        Path cgroup = Path.of("/sys/fs/cgroup/memory", record.containerId());
        ProcessHandle.of(record.sandboxPid()).orElseThrow().destroyForcibly();
        Instant deadline = Instant.now().plus(Duration.ofSeconds(15));
        while (i.alive() && Instant.now().isBefore(deadline)) {
            Thread.sleep(20);
        }
        assertFalse(i.alive());
        assertTrue(i.reason().contains("exited"), i.reason());

        created.destroy(revision, 0);

        assertTrue(ProcessHandle.of(record.sandboxPid()).map(p -> !p.isAlive()).orElse(true), "the sandbox process");
        assertFalse(Files.exists(record.files().runscRoot()), "runsc's state root");
        assertFalse(Files.exists(record.files().link(), java.nio.file.LinkOption.NOFOLLOW_LINKS), "the socket link");
        assertFalse(Files.exists(cgroup), "the cgroup " + cgroup);
    }
}
