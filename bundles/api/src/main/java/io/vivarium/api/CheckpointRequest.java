package io.vivarium.api;

/**
 * Body of {@code POST /v1/sandboxes/{id}/checkpoints}, and of the VM view's
 * {@code POST /v1/vms/{id}/snapshot} (the reference API's route, which takes a checkpoint) and
 * {@code /restore}. Since 1.3.
 *
 * @param tag a plain name: letters, digits, {@code .}, {@code _} and {@code -}, at most 64, not
 *        starting with a punctuation mark (never a path)
 */
public record CheckpointRequest(String tag) {
}
