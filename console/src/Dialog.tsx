import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

/** A modal dialog (the platform's: focus is trapped, Escape closes it) that is shown while mounted. */
export function Dialog({ title, onClose, children }: { title: string; onClose: () => void; children: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current!;
    dialog.showModal();
    return () => dialog.close();
  }, []);
  return (
    <dialog ref={ref} aria-label={title} onClose={onClose} onCancel={onClose}>
      <h2>{title}</h2>
      {children}
    </dialog>
  );
}

/** Asks before something that cannot be undone. */
export function Confirm(props: { title: string; text: string; action: string; onConfirm: () => void; onClose: () => void }) {
  return (
    <Dialog title={props.title} onClose={props.onClose}>
      <p>{props.text}</p>
      <div class="actions">
        <button type="button" class="danger" onClick={props.onConfirm}>
          {props.action}
        </button>
        <button type="button" class="quiet" onClick={props.onClose} autofocus>
          Cancel
        </button>
      </div>
    </Dialog>
  );
}
