#include <stdio.h>

int mod146(int x)
{
    int unused_146 = 146;
    return x + 146;
}
