package io.vivarium.backend.procbox.internal;

/** Short sleeps for polling loops. */
final class Sleep {

    private Sleep() {
    }

    /** Sleeps; returns false, keeping the interrupt status, if the thread was interrupted. */
    static boolean briefly(long millis) {
        try {
            Thread.sleep(millis);
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
