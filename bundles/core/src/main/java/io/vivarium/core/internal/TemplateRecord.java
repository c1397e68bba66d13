package io.vivarium.core.internal;

import io.vivarium.api.TemplateInfo;
import io.vivarium.api.TemplateRequest;

/**
 * What core persists about a template ({@code template-records/<name>.json}).
 *
 * @param state {@link TemplateInfo#BUILDING}, {@link TemplateInfo#READY} or {@link TemplateInfo#FAILED}
 * @param build its last build, or the one under way (whose progress is only in memory)
 * @param image what its image gives, once built
 * @param root the root its sandboxes run on, once built
 */
record TemplateRecord(String name, TemplateRequest request, long createdAtUnix, String state, TemplateInfo.Build build,
        TemplateInfo.ImageFacts image, TemplateRoot root) {
}
