package io.vivarium.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.IdlePolicy;
import io.vivarium.api.Role;
import io.vivarium.api.SandboxInfo;
import io.vivarium.state.file.internal.FileStores;
import io.vivarium.testkit.FakeBackend;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Idle demotion over core with a fake backend whose pause seam is registered. */
class TiersTest {
    private static final Caller ALICE = new Caller("alice", Role.ADMIN);

    @TempDir
    Path state;
    private final FakeBackend backend = new FakeBackend();
    private WholeCore core;

    private WholeCore started() throws Exception {
        WholeCore m = new WholeCore();
        m.fingerprintArrived(1, TestModes.fakeGuest());
        m.seamArrived(backend.name(), 1, 101, backend.pauseControl());
        m.seamArrived(backend.name(), 1, 102, backend.hibernation());
        m.backendArrived(new BackendRegistry.Entry(backend.name(), backend, "test.fake", "1.0.0", 1));
        m.bindStateStores(new FileStores(), java.util.Map.of());
        m.start(state, "", Duration.ZERO);
        return m;
    }

    @AfterEach
    void stop() {
        if (core != null) {
            core.deactivate();
        }
    }

    private String idleAfterOneSecond() {
        return core.create(ALICE, new CreateSandboxRequest(null, null, null, null, null, null, null, null, null,
                new IdlePolicy(1, null))).id();
    }

    @Test
    void anIdleSandboxIsPausedAndItsNextRequestResumesIt() throws Exception {
        core = started();
        String id = idleAfterOneSecond();
        assertEquals(SandboxInfo.HOT, core.get(ALICE, id).tier());
        assertEquals("paused", awaitTier(id, SandboxInfo.WARM).status());
        assertEquals(SandboxInfo.WARM, core.core().sandboxes().find(ALICE, id).record().demoted(), "the record says so");

        assertTrue(core.ping(ALICE, id).pong(), "a request that needs the guest is answered");
        assertEquals(SandboxInfo.HOT, core.get(ALICE, id).tier(), "it resumed the sandbox first");
        assertNull(core.core().sandboxes().find(ALICE, id).record().demoted());
    }

    @Test
    void aSandboxARequestPausedIsNotWokenByTheNextRequestButByATouch() throws Exception {
        core = started();
        String id = core.create(ALICE, null).id();
        core.pause(ALICE, id);
        ApiException refused = assertThrows(ApiException.class, () -> core.ping(ALICE, id));
        assertEquals(409, refused.status(), refused.getMessage());
        core.touch(ALICE, id);
        assertEquals(SandboxInfo.HOT, core.get(ALICE, id).tier());
    }

    @Test
    void aDemotionRecordedButNotDoneIsClearedByTheNextRequestAndMayBeDoneAgain() throws Exception {
        core = started();
        String id = idleAfterOneSecond();
        Sandbox sb = core.core().sandboxes().find(ALICE, id);
        // what a daemon killed between recording the demotion and pausing leaves: marked, still running
        sb.lifecycle.lock();
        try {
            core.core().sandboxes().persist(sb, sb.record().withDemoted(SandboxInfo.WARM));
        } finally {
            sb.lifecycle.unlock(core.core().sandboxes().observer());
        }
        assertEquals(SandboxInfo.WARM, awaitTier(id, SandboxInfo.WARM).tier(), "a marked running sandbox is demoted again when idle");
        assertTrue(core.ping(ALICE, id).pong());
        assertNull(core.core().sandboxes().find(ALICE, id).record().demoted());
    }

    @Test
    void activityHeldOpenKeepsAnIdleSandboxHotUntilItEnds() throws Exception {
        core = started();
        String id = idleAfterOneSecond();
        // what a request forwarded to an exposed port holds while its answer or WebSocket lasts
        Runnable done = core.core().live().hold(core.core().sandboxes().find(ALICE, id));
        Thread.sleep(2500); // past its pause_after_secs, with the demotion look run twice
        assertEquals(SandboxInfo.HOT, core.get(ALICE, id).tier(), "held open, it is not idle");
        done.run();
        done.run(); // a second run changes nothing
        assertEquals(SandboxInfo.WARM, awaitTier(id, SandboxInfo.WARM).tier(), "once it ends, idle again");
    }

    private SandboxInfo awaitTier(String id, String tier) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        SandboxInfo info = core.get(ALICE, id);
        while (!tier.equals(info.tier())) {
            assertTrue(System.nanoTime() < deadline, "not " + tier + " within 10 s: " + info);
            Thread.sleep(50);
            info = core.get(ALICE, id);
        }
        return info;
    }

    @Test
    void anIdleSandboxGoesWarmThenColdAndItsNextRequestWakesItThreeTimes() throws Exception {
        core = started();
        String id = core.create(ALICE, new CreateSandboxRequest(null, null, null, null, null, null, null, null, null,
                new IdlePolicy(1, 2))).id();
        for (int cycle = 1; cycle <= 3; cycle++) {
            assertEquals("paused", awaitTier(id, SandboxInfo.COLD).status(), "cycle " + cycle);
            Sandbox sb = core.core().sandboxes().find(ALICE, id);
            assertEquals("true", sb.record().state().data().get("cold"), "the saved state is recorded");
            assertTrue(core.ping(ALICE, id).pong(), "a request wakes it");
            assertEquals(SandboxInfo.HOT, core.get(ALICE, id).tier());
            assertNull(core.core().sandboxes().find(ALICE, id).record().demoted());
        }
        assertEquals(3, backend.wakes.get());
    }

    @Test
    void aWakeThatFailsIsA503AndTheSandboxStaysColdForTheNextRequest() throws Exception {
        core = started();
        String id = core.create(ALICE, new CreateSandboxRequest(null, null, null, null, null, null, null, null, null,
                new IdlePolicy(null, 1))).id();
        awaitTier(id, SandboxInfo.COLD);
        backend.failWake = true;
        ApiException refused = assertThrows(ApiException.class, () -> core.ping(ALICE, id));
        assertEquals(503, refused.status());
        assertTrue(refused.getMessage().contains("could not be started again from its saved state")
                && refused.getMessage().contains("it stays cold"), refused.getMessage());
        assertEquals(SandboxInfo.COLD, core.get(ALICE, id).tier());
        backend.failWake = false;
        assertTrue(core.ping(ALICE, id).pong(), "the next request wakes it");
        assertEquals(SandboxInfo.HOT, core.get(ALICE, id).tier());
    }

    @Test
    void aColdSandboxStaysColdAcrossARestartAndIsWokenThen() throws Exception {
        core = started();
        String id = core.create(ALICE, new CreateSandboxRequest(null, null, null, null, null, null, null, null, null,
                new IdlePolicy(null, 1))).id();
        awaitTier(id, SandboxInfo.COLD);
        core.deactivate();
        core = started();
        assertEquals(SandboxInfo.COLD, core.get(ALICE, id).tier(), "the record keeps the tier");
        core.touch(ALICE, id);
        assertEquals(SandboxInfo.HOT, core.get(ALICE, id).tier(), "a touch wakes it");
    }

    @Test
    void aColdTimeIsRefusedForABackendThatCannotHibernateAndMustComeAfterThePause() throws Exception {
        core = started();
        ApiException early = assertThrows(ApiException.class, () -> core.create(ALICE, new CreateSandboxRequest(null, null,
                null, null, null, null, null, null, null, new IdlePolicy(5, 5))));
        assertEquals(400, early.status(), early.getMessage());
        assertTrue(early.getMessage().contains("cold_after_secs must be more than"), early.getMessage());
        assertNull(new IdleRules(0, 60).resolve(null, "procbox", false), "no cold default where it cannot hibernate");
        ApiException refused = assertThrows(ApiException.class,
                () -> new IdleRules(0, 0).resolve(new IdlePolicy(null, 60), "procbox", false));
        assertTrue(refused.getMessage().contains("does not report hibernate"), refused.getMessage());
    }
}
