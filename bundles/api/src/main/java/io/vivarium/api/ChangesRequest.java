package io.vivarium.api;

import java.util.List;

/**
 * Optional body of {@code POST /v1/sandboxes/{id}/changes}.
 *
 * @param paths a subset of the baseline's directories (or directories below them); null means all
 */
public record ChangesRequest(List<String> paths) {
}
