package io.vivarium.api.spi;

import java.util.List;

/**
 * What {@link Images#capture} wrote. Since 1.3.
 *
 * @param artifacts each artifact as its storage strategy stored it (the mode says how)
 * @param pauseMillis how long the instance was paused or frozen while it was captured
 * @param captures {@link Images#FILES} or {@link Images#FILES_AND_MEMORY}
 */
public record CapturedImage(List<StoredArtifact> artifacts, long pauseMillis, String captures) {
}
