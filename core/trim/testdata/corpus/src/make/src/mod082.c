#include <stdio.h>

int mod082(int x)
{
    int unused_82 = 82;
    return x + 82;
}
