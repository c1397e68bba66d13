package io.vivarium.api.state;

/** A transaction expected a revision that is not the stored one: someone wrote the record meanwhile. */
public final class StaleRevisionException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    public StaleRevisionException(String collection, String key, long expected, long stored) {
        super(collection + "/" + key + ": expected revision " + expected + " but the store holds "
                + (stored == Stored.ABSENT ? "no such record" : "revision " + stored) + "; nothing was written");
    }
}
