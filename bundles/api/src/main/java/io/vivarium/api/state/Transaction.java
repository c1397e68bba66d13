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

    /** Writes {@code body} as revision {@code expectedRevision + 1} ({@link Stored#ABSENT} for a new record). */
    public <T> Transaction put(RecordCollection<T> c, String key, T body, long expectedRevision) {
        return add(new Op(c, key, c.type().cast(Objects.requireNonNull(body, "body")), expectedRevision));
    }

    public Transaction delete(RecordCollection<?> c, String key, long expectedRevision) {
        return add(new Op(c, key, null, expectedRevision));
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
