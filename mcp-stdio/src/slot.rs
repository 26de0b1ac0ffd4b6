//! The one-shot way an answer goes from whoever reads it to the caller
//! waiting for it: one slot under a lock, shared by the two ends.
//!
//! It does what `tokio::sync::oneshot` did here, with less: the two ends
//! meet under an uncontended lock instead of a state machine of atomics,
//! and a waiting caller is not charged against the runtime's cooperative
//! budget (it is polled once to wait and once to take its answer). Taking
//! an answer cost the caller about 400 instructions through tokio's
//! receiver (callgrind, 64 calls in flight), on the caller's thread, which
//! on a multi-thread runtime with everything on one CPU is the thread the
//! calls wait on.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

/// A slot for one value and the two ends on it.
pub(crate) fn slot<T>() -> (Sender<T>, Receiver<T>) {
    let inner = Arc::new(Mutex::new(State {
        value: None,
        waker: None,
        sender: true,
        receiver: true,
    }));
    (
        Sender {
            inner: Some(Arc::clone(&inner)),
        },
        Receiver { inner },
    )
}

#[derive(Debug)]
struct State<T> {
    value: Option<T>,
    /// Who waits for the value, if anyone does.
    waker: Option<Waker>,
    /// Each end is still there.
    sender: bool,
    receiver: bool,
}

fn lock<T>(inner: &Mutex<State<T>>) -> MutexGuard<'_, State<T>> {
    inner.lock().unwrap_or_else(|p| p.into_inner())
}

/// The end that puts the value in. Dropped without sending, it tells the
/// receiver that no value will come.
#[derive(Debug)]
pub(crate) struct Sender<T> {
    /// `None` once sent.
    inner: Option<Arc<Mutex<State<T>>>>,
}

impl<T> Sender<T> {
    /// Puts `value` in the slot and wakes the receiver if it waits; gives
    /// `value` back when the receiver is gone.
    pub(crate) fn send(mut self, value: T) -> Result<(), T> {
        match self.inner.take() {
            Some(inner) => end(&inner, Some(value)).map_or(Ok(()), Err),
            None => Err(value),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            end(&inner, None);
        }
    }
}

/// The sender's end, with a value or without: the receiver, if it waits,
/// is woken. The value comes back when the receiver is gone.
fn end<T>(inner: &Mutex<State<T>>, value: Option<T>) -> Option<T> {
    let waker = {
        let mut state = lock(inner);
        state.sender = false;
        if !state.receiver {
            return value;
        }
        state.value = value;
        state.waker.take()
    };
    if let Some(waker) = waker {
        waker.wake();
    }
    None
}

/// The sender went without sending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Closed;

/// The end that waits for the value.
#[derive(Debug)]
pub(crate) struct Receiver<T> {
    inner: Arc<Mutex<State<T>>>,
}

impl<T> Future for Receiver<T> {
    type Output = Result<T, Closed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = lock(&self.inner);
        if let Some(value) = state.value.take() {
            return Poll::Ready(Ok(value));
        }
        if !state.sender {
            return Poll::Ready(Err(Closed));
        }
        match &state.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            _ => state.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        // Taken out of the lock, to be dropped after it: a value's drop
        // runs code of its own.
        let (value, waker) = {
            let mut state = lock(&self.inner);
            state.receiver = false;
            (state.value.take(), state.waker.take())
        };
        drop((value, waker));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    /// Counts its wakes.
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counter() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        (Arc::clone(&count), Waker::from(Arc::clone(&count)))
    }

    fn poll<T>(rx: &mut Receiver<T>, cx: &mut Context<'_>) -> Poll<Result<T, Closed>> {
        Pin::new(rx).poll(cx)
    }

    fn woken(count: &Count) -> usize {
        count.0.load(Ordering::SeqCst)
    }

    #[test]
    fn a_value_sent_reaches_the_receiver_and_wakes_it_once() {
        let (count, waker) = counter();
        let mut cx = Context::from_waker(&waker);
        let (tx, mut rx) = slot();
        assert_eq!(poll(&mut rx, &mut cx), Poll::Pending);
        assert_eq!(poll(&mut rx, &mut cx), Poll::Pending);
        assert_eq!(woken(&count), 0);
        assert_eq!(tx.send(7), Ok(()));
        assert_eq!(woken(&count), 1);
        assert_eq!(poll(&mut rx, &mut cx), Poll::Ready(Ok(7)));
        // A value sent before anyone waits is there at the first poll.
        let (tx, mut rx) = slot();
        assert_eq!(tx.send("early"), Ok(()));
        assert_eq!(poll(&mut rx, &mut cx), Poll::Ready(Ok("early")));
        assert_eq!(woken(&count), 1);
    }

    #[test]
    fn a_sender_dropped_without_sending_closes_the_slot() {
        let (count, waker) = counter();
        let mut cx = Context::from_waker(&waker);
        let (tx, mut rx) = slot::<u8>();
        assert_eq!(poll(&mut rx, &mut cx), Poll::Pending);
        drop(tx);
        assert_eq!(woken(&count), 1);
        assert_eq!(poll(&mut rx, &mut cx), Poll::Ready(Err(Closed)));
    }

    #[test]
    fn a_receiver_gone_takes_no_value_and_is_not_woken() {
        let (count, waker) = counter();
        let mut cx = Context::from_waker(&waker);
        let (tx, mut rx) = slot();
        assert_eq!(poll(&mut rx, &mut cx), Poll::Pending);
        drop(rx);
        assert_eq!(tx.send(Arc::new(1)), Err(Arc::new(1)));
        let (tx, mut rx) = slot::<u8>();
        assert_eq!(poll(&mut rx, &mut cx), Poll::Pending);
        drop(rx);
        drop(tx);
        assert_eq!(woken(&count), 0);
        // The waker a gone receiver left is let go: nothing holds it.
        assert_eq!(Arc::strong_count(&count), 2);
    }
}
