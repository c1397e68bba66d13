package io.vivarium.backend.gvisor.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.SandboxInstance;

import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What only gVisor's cold tier has: the runsc that saved it, and the link a reboot empties. */
class GvisorHibernationTest {

    @TempDir
    Path tmp;

    private Revision revision;
    private InstanceSpec spec;
    private SandboxInstance instance;

    @BeforeEach
    void start() {
        GvisorHost.assumeRunsc();
        revision = GvisorHost.revision(tmp);
        spec = new InstanceSpec("cold", tmp.resolve("cold"), null, null, null, null, null);
        instance = revision.create(spec);
    }

    @AfterEach
    void destroy() {
        if (instance != null) {
            revision.backend().destroy(spec, instance.state());
        }
        if (revision != null) {
            revision.close();
        }
    }

    private SandboxInstance cold() {
        revision.pause().pause(instance);
        InstanceState saved = revision.hibernation().save(instance, GvisorHost.operation());
        instance = revision.hibernation().release(instance, saved);
        return instance;
    }

    @Test
    void aStateSavedByAnotherRunscIsRefusedNamingBoth() throws Exception {
        SandboxInstance cold = cold();
        Path version = ((GvisorInstance) cold).record().cold().resolve(GvisorHibernation.RUNSC_VERSION);
        assertEquals(revision.runtime().probe().runscVersion(), Files.readString(version), "the saving runsc is recorded");
        Files.writeString(version, "runsc version 0.0~20221219.0");
        ApiException refused = assertThrows(ApiException.class, () -> revision.hibernation().wake(cold, GvisorHost.operation()));
        assertEquals(409, refused.status());
        assertTrue(refused.getMessage().contains("0.0~20221219.0") && refused.getMessage().contains("delete it"),
                refused.getMessage());
        assertTrue(revision.hibernation().cold(cold), "it stays cold");
    }

    @Test
    void aWakeAfterTheLinkDirectoryWasEmptiedReachesTheAgent() throws Exception {
        SandboxInstance cold = cold();
        Path link = ((GvisorInstance) cold).record().files().link();
        Files.delete(link); // as a reboot that emptied the temporary directory would
        instance = revision.hibernation().wake(cold, GvisorHost.operation());
        assertFalse(revision.hibernation().cold(instance));
        assertTrue(instance.channel().ping().pong(), "the agent answers through the link made again");
    }
}
