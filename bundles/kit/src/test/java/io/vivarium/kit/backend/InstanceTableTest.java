package io.vivarium.kit.backend;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;

import io.vivarium.api.spi.GuestChannel;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.SandboxInstance;

import org.junit.jupiter.api.Test;

class InstanceTableTest {

    static final class Held implements SandboxInstance, AutoCloseable {
        final String id;
        boolean closed;

        Held(String id) {
            this.id = id;
        }

        @Override
        public String id() {
            return id;
        }

        @Override
        public InstanceState state() {
            return new InstanceState(1, java.util.Map.of());
        }

        @Override
        public boolean alive() {
            return true;
        }

        @Override
        public GuestChannel channel() {
            throw new UnsupportedOperationException();
        }

        @Override
        public String workspace() {
            return "/work";
        }

        @Override
        public void close() {
            closed = true;
        }
    }

    private final InstanceTable<Held> table = new InstanceTable<>(Held.class, "test");

    @Test
    void aReplacedInstanceIsLetGoOfButNotTheSameOnePutTwice() {
        Held first = table.put(new Held("a"));
        table.put(first);
        assertFalse(first.closed);
        Held second = table.put(new Held("a"));
        assertTrue(first.closed);
        assertSame(second, table.get("a").orElseThrow());
    }

    @Test
    void removeAndLetGoOfAllCloseWhatTheyForget() {
        Held a = table.put(new Held("a"));
        Held b = table.put(new Held("b"));
        assertEquals(Optional.of(a), table.remove("a"));
        assertTrue(a.closed);
        assertEquals(Optional.empty(), table.remove("a"));
        table.letGoOfAll();
        assertTrue(b.closed);
        assertTrue(table.all().isEmpty());
    }

    @Test
    void ownRefusesAnotherBackendsInstance() {
        Held a = new Held("a");
        assertSame(a, table.own(a));
        SandboxInstance foreign = new SandboxInstance() {
            @Override
            public String id() {
                return "x";
            }

            @Override
            public InstanceState state() {
                return null;
            }

            @Override
            public boolean alive() {
                return false;
            }

            @Override
            public GuestChannel channel() {
                return null;
            }

            @Override
            public String workspace() {
                return null;
            }
        };
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> table.own(foreign));
        assertTrue(e.getMessage().contains("not an instance of this test backend"), e.getMessage());
    }
}
