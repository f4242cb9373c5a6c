//! Bytes uploaded as an API project's zip: the reader never panics and keeps its bounds,
//! and what it takes reads as WSO2's model and compares with itself as no change.
#![no_main]

use apim_archive::Project;
use apim_archive::project::{MAX_DEPTH, MAX_ENTRIES};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(project) = Project::from_zip(data) else {
        return;
    };
    assert!(project.files.len() <= MAX_ENTRIES);
    for path in project.files.keys() {
        assert!(!path.split('/').any(|part| part == ".." || part.is_empty()));
        assert!(path.split('/').count() <= MAX_DEPTH);
    }
    if apim_archive::plan::model_of(&project).is_ok()
        && let Ok(changes) = apim_archive::plan::changes(&project, &project)
    {
        assert!(changes.is_empty());
    }
});
