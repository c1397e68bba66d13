package io.vivarium.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.EvalRequest;
import io.vivarium.api.Role;
import io.vivarium.state.file.internal.FileStores;
import io.vivarium.testkit.FakeBackend;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The eval request checked once, in core, and a backend without eval refused before its channel is asked. */
class EvaluationTest {
    static final Caller ALICE = new Caller("alice", Role.ADMIN);

    @TempDir
    Path state;
    SandboxManager manager;
    String id;

    @BeforeEach
    void start() throws Exception {
        manager = new SandboxManager();
        manager.backendArrived(new BackendRegistry.Entry("fake", new FakeBackend(), "test.bundle", "1.0.0", 1));
        manager.bindStateStores(new FileStores(), java.util.Map.of());
        manager.start(state, "", Duration.ZERO);
        id = manager.create(ALICE, null).id();
    }

    private int status(EvalRequest request) {
        return assertThrows(ApiException.class, () -> manager.eval(ALICE, id, request)).status();
    }

    @Test
    void badRequestsAre400WhateverTheBackend() {
        assertEquals(400, status(null));
        assertEquals(400, status(new EvalRequest(null, 5)));
        assertEquals(400, status(new EvalRequest("x".repeat(Evaluation.MAX_CODE_BYTES + 1), 5)));
        assertEquals(400, status(new EvalRequest("é".repeat(Evaluation.MAX_CODE_BYTES / 2 + 1), 5)), "the limit is in UTF-8 bytes");
        assertEquals(400, status(new EvalRequest("1\0", 5)));
        assertEquals(400, status(new EvalRequest("1", 0)));
        assertEquals(400, status(new EvalRequest("1", 3601)));
    }

    @Test
    void anUnknownSandboxIs404AndABackendWithoutEvalIs501() {
        ApiException missing = assertThrows(ApiException.class, () -> manager.eval(ALICE, "sb-nope", new EvalRequest("1", null)));
        assertEquals(404, missing.status());
        ApiException none = assertThrows(ApiException.class, () -> manager.eval(ALICE, id, new EvalRequest("1", null)));
        assertEquals(501, none.status());
        assertTrue(none.getMessage().contains("backend fake has no warm interpreter"), none.getMessage());
    }
}
