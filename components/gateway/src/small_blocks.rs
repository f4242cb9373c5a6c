//! Small allocations served from free lists of their own, in front of a general allocator.
//!
//! A request allocates and frees about forty small blocks (the head's headers, the call
//! record, the lists wit-bindgen lowers), and a general allocator's search and coalescing
//! cost talc about 300 instructions a pair. Here a freed small block goes onto the list of
//! its size class and the next allocation of that class takes it back, in a few
//! instructions each way. Lists hold at most [`MAX_LISTED_BYTES`]; beyond that, freed
//! blocks go back to the general allocator, so memory that small blocks held at a peak can
//! still serve large ones.
//!
//! Only for a single-threaded program: a component instance is one (`wasm32-wasip2` has no
//! threads), and the lists take no lock.

#![allow(
    unsafe_code,
    reason = "a global allocator: raw blocks linked through their own first word"
)]

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::ptr;

/// Size classes are multiples of this, and their blocks aligned to it.
const GRANULE: usize = 16;
/// Classes `GRANULE`, `2 × GRANULE`, … up to `CLASSES × GRANULE` bytes (256).
const CLASSES: usize = 16;
/// Most bytes the lists hold together.
pub const MAX_LISTED_BYTES: usize = 1 << 20;

/// Free lists of small blocks over `inner`, which serves the rest.
pub struct SmallBlocks<A> {
    inner: A,
    lists: UnsafeCell<Lists>,
}

struct Lists {
    /// Per class, the first free block; each free block's first word links the next.
    heads: [*mut u8; CLASSES],
    listed_bytes: usize,
}

// A single-threaded program never shares the lists between threads.
#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
unsafe impl<A: Sync> Sync for SmallBlocks<A> {}

impl<A> SmallBlocks<A> {
    /// Empty lists over `inner`.
    pub const fn new(inner: A) -> Self {
        Self {
            inner,
            lists: UnsafeCell::new(Lists {
                heads: [ptr::null_mut(); CLASSES],
                listed_bytes: 0,
            }),
        }
    }
}

/// The class of a block of `layout`, when it is small enough for one.
fn class_of(layout: Layout) -> Option<usize> {
    let small = layout.size() <= CLASSES * GRANULE && layout.align() <= GRANULE;
    small.then(|| layout.size().saturating_sub(1) / GRANULE)
}

/// What a block of `class` takes from the general allocator.
fn class_layout(class: usize) -> Layout {
    // A multiple of a power of two, aligned to it, at most 256 bytes: always a layout.
    Layout::from_size_align((class + 1) * GRANULE, GRANULE).unwrap_or(Layout::new::<u8>())
}

unsafe impl<A: GlobalAlloc> GlobalAlloc for SmallBlocks<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some(class) = class_of(layout) else {
            return unsafe { self.inner.alloc(layout) };
        };
        // SAFETY: single-threaded, and no reference to the lists outlives this call.
        let lists = unsafe { &mut *self.lists.get() };
        let block = lists.heads[class];
        if block.is_null() {
            return unsafe { self.inner.alloc(class_layout(class)) };
        }
        // SAFETY: a listed block is free, at least a word long and aligned to GRANULE.
        lists.heads[class] = unsafe { block.cast::<*mut u8>().read() };
        lists.listed_bytes -= class_layout(class).size();
        block
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        let Some(class) = class_of(layout) else {
            return unsafe { self.inner.dealloc(block, layout) };
        };
        let size = class_layout(class).size();
        // SAFETY: as in `alloc`.
        let lists = unsafe { &mut *self.lists.get() };
        if lists.listed_bytes + size > MAX_LISTED_BYTES {
            return unsafe { self.inner.dealloc(block, class_layout(class)) };
        }
        // SAFETY: the block came from `alloc` with this class, and is free from now on.
        unsafe { block.cast::<*mut u8>().write(lists.heads[class]) };
        lists.heads[class] = block;
        lists.listed_bytes += size;
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller keeps `new_size`, rounded up to `layout.align()`, in range.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        match (class_of(layout), class_of(new_layout)) {
            (None, None) => unsafe { self.inner.realloc(block, layout, new_size) },
            (Some(old), Some(new)) if old == new => block,
            _ => unsafe {
                let moved = self.alloc(new_layout);
                if !moved.is_null() {
                    ptr::copy_nonoverlapping(block, moved, layout.size().min(new_size));
                    self.dealloc(block, layout);
                }
                moved
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::System;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    #[test]
    fn a_freed_small_block_serves_the_next_of_its_class_only() {
        let blocks = SmallBlocks::new(System);
        unsafe {
            let first = blocks.alloc(layout(20, 8));
            blocks.dealloc(first, layout(20, 8));
            let other_class = blocks.alloc(layout(40, 8));
            assert_ne!(first, other_class, "40 bytes is another class");
            let same_class = blocks.alloc(layout(32, 4));
            assert_eq!(first, same_class, "17 to 32 bytes share a class");
            blocks.dealloc(same_class, layout(32, 4));
            blocks.dealloc(other_class, layout(40, 8));
        }
    }

    #[test]
    fn large_or_overaligned_blocks_go_to_the_general_allocator() {
        assert_eq!(class_of(layout(256, 16)), Some(15));
        assert_eq!(class_of(layout(257, 1)), None);
        assert_eq!(class_of(layout(8, 32)), None);
        assert_eq!(class_of(layout(1, 1)), Some(0));
    }

    #[test]
    fn a_reallocated_block_keeps_its_bytes_across_classes() {
        let blocks = SmallBlocks::new(System);
        unsafe {
            let block = blocks.alloc(layout(10, 1));
            block.copy_from_nonoverlapping(b"0123456789".as_ptr(), 10);
            let same = blocks.realloc(block, layout(10, 1), 16);
            assert_eq!(same, block, "still the class of 16 bytes");
            let grown = blocks.realloc(same, layout(16, 1), 100);
            let large = blocks.realloc(grown, layout(100, 1), 4096);
            let small = blocks.realloc(large, layout(4096, 1), 10);
            assert_eq!(std::slice::from_raw_parts(small, 10), b"0123456789");
            blocks.dealloc(small, layout(10, 1));
        }
    }

    #[test]
    fn the_lists_hold_no_more_than_their_bound() {
        let blocks = SmallBlocks::new(System);
        let count = MAX_LISTED_BYTES / 256 + 10;
        unsafe {
            let taken: Vec<_> = (0..count).map(|_| blocks.alloc(layout(256, 8))).collect();
            for block in taken {
                blocks.dealloc(block, layout(256, 8));
            }
            assert!((*blocks.lists.get()).listed_bytes <= MAX_LISTED_BYTES);
            assert_eq!((*blocks.lists.get()).listed_bytes, MAX_LISTED_BYTES);
        }
    }
}
