package io.vivarium.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Set;

import org.junit.jupiter.api.Test;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.StoredArtifact;
import io.vivarium.testkit.InertStrategy;

class StorageRegistryTest {
    private static final Path DIR = Path.of("/state");

    private static final InertStrategy REFLINK = new InertStrategy("reflink", Set.of(ArtifactKind.values()),
            Set.of("reflink", "copy"), true, false);
    private static final InertStrategy DIFFCHAIN = new InertStrategy("diffchain", Set.of(ArtifactKind.MEMORY),
            Set.of("diff", "reflink", "copy"), true, true);

    private static StoredArtifact memory(String mode) {
        return new StoredArtifact(ArtifactKind.MEMORY, DIR.resolve("ram"), mode, 0, null, null, 0);
    }

    @Test
    void aWorkingStrategyThatChainsIsPreferredToAnOlderOne() {
        StorageRegistry registry = new StorageRegistry();
        registry.add(1, REFLINK);
        registry.add(2, DIFFCHAIN);
        assertSame(DIFFCHAIN, registry.choose(ArtifactKind.MEMORY, DIR));
        assertSame(REFLINK, registry.choose(ArtifactKind.WORKSPACE, DIR));
    }

    @Test
    void aStrategyThatWorksIsPreferredToOneThatChainsByFallingBack() {
        StorageRegistry registry = new StorageRegistry();
        registry.add(1, new InertStrategy("slow", Set.of(ArtifactKind.MEMORY), Set.of("diff"), false, true));
        registry.add(2, REFLINK);
        assertSame(REFLINK, registry.choose(ArtifactKind.MEMORY, DIR));
    }

    @Test
    void anArtifactIsReadByAStrategyThatWritesItsMode() {
        StorageRegistry registry = new StorageRegistry();
        registry.add(1, REFLINK);
        registry.add(2, DIFFCHAIN);
        assertSame(DIFFCHAIN, registry.reader(memory("diff")));
        assertSame(REFLINK, registry.reader(memory("reflink")));
    }

    @Test
    void anArtifactWhoseStrategyIsGoneIsA503NamingItsMode() {
        StorageRegistry registry = new StorageRegistry();
        registry.add(1, REFLINK);
        ApiException ex = assertThrows(ApiException.class, () -> registry.reader(memory("diff")));
        assertEquals(503, ex.status());
        assertTrue(ex.getMessage().contains("'diff'"), ex.getMessage());
    }
}
