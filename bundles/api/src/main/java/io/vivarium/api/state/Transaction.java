package io.vivarium.api.state;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * Puts and deletes across collections that {@link StateStore#commit} applies all or nothing, each
 * only if its record is still at the revision it expects.
 */
public final class Transaction {
    /** One write: {@code body} null deletes. */
    public record Op(RecordCollection<?> collection, String key, Object body, long expected) {
        public boolean delete() {
            return body == null;
        }
    }

    private final List<Op> ops = new ArrayList<>();
    private final Set<String> touched = new HashSet<>();
    private boolean awaitsDurability = true;

    /** Writes {@code body} as revision {@code expectedRevision + 1} ({@link Stored#ABSENT} for a new record). */
    public <T> Transaction put(RecordCollection<T> c, String key, T body, long expectedRevision) {
        return add(new Op(c, key, c.type().cast(Objects.requireNonNull(body, "body")), expectedRevision));
    }

    public Transaction delete(RecordCollection<?> c, String key, long expectedRevision) {
        return add(new Op(c, key, null, expectedRevision));
    }

    /**
     * Lets {@link StateStore#commit} return before the writes are on the disk: they are still applied
     * all or nothing, in order with every other commit, read back at once and kept when the daemon
     * dies, but a crash of the host (or of the database's server) may lose the whole transaction,
     * never a part of it. For records that only guide the clean-up after such a crash (a create
     * under way) or that a reconciliation makes again. Since 1.1.
     */
    public Transaction withoutAwaitingDurability() {
        awaitsDurability = false;
        return this;
    }

    /** Whether {@link StateStore#commit} returns only once the writes are durable (the default). Since 1.1. */
    public boolean awaitsDurability() {
        return awaitsDurability;
    }

    /** The writes, in the order they were added. */
    public List<Op> ops() {
        return List.copyOf(ops);
    }

    private Transaction add(Op op) {
        RecordCollection.checkKey(op.key());
        if (!touched.add(op.collection().name() + "/" + op.key())) {
            throw new IllegalArgumentException("a transaction writes " + op.collection().name() + "/" + op.key() + " once");
        }
        ops.add(op);
        return this;
    }
}
