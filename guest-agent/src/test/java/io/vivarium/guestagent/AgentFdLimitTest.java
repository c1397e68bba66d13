package io.vivarium.guestagent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * File descriptors: background processes that keep an exec's pipes open cannot make the agent
 * hold fds without bound, and an agent out of fds neither stops serving nor spins.
 */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class AgentFdLimitTest {
    /** The agent under a hard limit of this many fds (it raises only its soft limit, up to the hard one). */
    static final int FD_LIMIT = 32;
    @TempDir
    Path dir;
    AgentProcess agent;

    @AfterEach
    void stop() throws Exception {
        if (agent != null) {
            agent.close();
        }
    }

    void startWithFdLimit() throws Exception {
        agent = AgentProcess.start(dir, List.of("/bin/sh", "-c", "ulimit -n " + FD_LIMIT + " && exec \"$0\" \"$@\""));
    }

    /** An exec that returns at once and leaves a background process holding its stdout and stderr. */
    static void leaveHolder(AgentConnection conn) throws IOException {
        JsonNode r = conn.ok("vivarium-exec", Map.of("argv", List.of("/bin/sh", "-c", "sleep 300 &"), "env", AgentExecTest.PATH,
                "wait-ms", 10000));
        assertTrue(r.get("exited").asBoolean(), r.toString());
    }

    static long openFds(long pid) throws IOException {
        try (Stream<Path> fds = Files.list(Path.of("/proc/" + pid + "/fd"))) {
            return fds.count();
        }
    }

    @Test
    void thePipesOfAtMost128FinishedExecsAreKeptForBackgroundProcesses() throws Exception {
        assumeTrue(AgentExecTest.isRoot(), "needs root: the agent is not dumpable, so only root lists its /proc/PID/fd");
        agent = AgentProcess.start(dir);
        AgentConnection conn = agent.connect();
        for (int i = 0; i < 200; i++) {
            leaveHolder(conn);
        }
        long fds = openFds(agent.pid());
        assertTrue(fds <= 2 * 128 + 16, "the agent holds " + fds + " fds for 200 background holders");
        assertTrue(agent.connect().ok("guest-ping", null).isObject());
    }

    @Test
    void pastItsFdLimitTheAgentClosesTheOldestHeldPipesAndServesOn() throws Exception {
        startWithFdLimit();
        AgentConnection conn = agent.connect();
        for (int i = 0; i < FD_LIMIT; i++) {
            leaveHolder(conn);
        }
        // the held pipes fill the agent's fd table: connections, and a further exec, take fds from them
        List<AgentConnection> more = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            AgentConnection c = agent.connect();
            more.add(c);
            assertTrue(c.ok("guest-ping", null).isObject(), "connection " + i);
        }
        leaveHolder(more.get(0));
    }

    @Test
    void aConnectionPastTheFdLimitWaitsWithoutSpinningAndIsServedOnceAnFdIsFree() throws Exception {
        startWithFdLimit();
        List<AgentConnection> conns = new ArrayList<>();
        for (int i = 0; i < FD_LIMIT; i++) {
            conns.add(agent.connect()); // the last few wait in the backlog: the agent has no fd for them
        }
        AgentConnection last = conns.get(conns.size() - 1);
        long id = last.send("guest-ping", null);
        long before = AgentUserTest.cpuTicks(agent.pid());
        long start = System.nanoTime();
        while (System.nanoTime() - start < TimeUnit.SECONDS.toNanos(1)) {
            AgentProcess.pause();
        }
        long ticks = AgentUserTest.cpuTicks(agent.pid()) - before;
        assertTrue(ticks < 20, "the agent used " + ticks + " clock ticks of CPU in 1 s while out of fds");
        for (AgentConnection c : conns.subList(0, 8)) {
            c.close();
        }
        JsonNode answer = last.read();
        assertEquals(id, answer.get("id").asLong(), answer.toString());
        assertTrue(answer.get("return").isObject(), answer.toString());
    }
}
