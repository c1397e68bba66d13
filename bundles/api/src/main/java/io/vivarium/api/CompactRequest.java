package io.vivarium.api;

/**
 * Body of {@code POST /v1/snapshots/{tag}/compact}. Since 1.3.
 *
 * @param to the tag of the flat copy to write; a plain name, not the source's, not yet used
 */
public record CompactRequest(String to) {
}
